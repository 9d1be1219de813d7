"""tt.scan (inclusive; forward or reverse) on any axis, N operands, any combine region.

Hierarchical over the bits of the axis coordinate, least significant first (docs/reductions.md):
  1. serial: the lowest axis bits held in registers form a chunk; each thread scans its
     chunks in order (P = prefix within the chunk, T = chunk total);
  2. every higher axis bit doubles the block: lane bits exchange T with a shuffle_xor,
     a run of warp bits exchanges T through threadgroup scratch (one pass: each thread folds
     the totals of the simdgroups before it), register bits pair two chunks of one thread.
     A chunk in the later half adds the earlier half's total to its carry C (on the left);
  3. every element: combine(C, P).
Work per element is O(1) plus O(log lanes + warps) per chunk: no quadratic fold.
`reverse` runs the same plan on mirrored positions (every axis bit flipped).
"""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.lower.axis_plan import AxisBit, AxisPlan, pext_expr, spread, thread_bits
from msltrans.lower.combine import (
    Combine,
    batch_size,
    combine_of,
    emit_combine,
    plan_of,
    publish,
    register_table,
    scratch_arrays,
    shuffle_xor,
)
from msltrans.lower.emitter import LANE, WARP, Emitter
from msltrans.lower.registry import lowers


class _Scan:
    def __init__(self, em: Emitter, op: Op, comb: Combine, plan: AxisPlan, reverse: bool):
        self.em, self.comb, self.plan, self.reverse = em, comb, plan, reverse
        bits = list(plan.bits)
        self.chunk = []
        while bits and bits[0].kind == "reg":
            self.chunk.append(bits.pop(0).bit)
        self.steps: list[AxisBit] = bits
        self.group_bits = list(plan.other_regs) + [b.bit for b in bits if b.kind == "reg"]
        self.groups = 1 << len(self.group_bits)
        self.n = 1 << len(self.chunk)
        self.srcs = [em.name(v) for v in op.operands]
        self.outs = [em.declare(v) for v in op.results]
        self.tot = self._arrays("msl_tot")
        self.carry = self._arrays("msl_carry")
        self.has = em.fresh("msl_has")
        em.line(f"bool {self.has}[{self.groups}];")
        self.done_lanes = 0  # lane bits already folded into T (T is equal across them)
        regs = [spread(c, self.group_bits) | spread(s, self.chunk)
                for c in range(self.groups) for s in range(self.n)]
        self.table = register_table(em, "scan_regs", regs)

    def _arrays(self, hint: str) -> list[str]:
        names = []
        for c in self.comb.ctypes:
            name = self.em.fresh(hint)
            self.em.line(f"{c} {name}[{self.groups}];")
            names.append(name)
        return names

    def reg(self, c: str, s: int | str) -> str:
        return f"{self.table}[{c} * {self.n}u + {s}]"

    def loop(self, var: str, count: int, first: int = 0) -> None:
        self.em.line(f"for (uint {var} = {first}u; {var} < {count}u; ++{var}) {{")
        self.em.indent(1)

    def end(self) -> None:
        self.em.indent(-1)
        self.em.line("}")

    def add_carry(self, c: str, left: list[str]) -> None:
        """C[c] = combine(left, C[c]) (or left when C[c] is still empty)."""
        em = self.em
        em.line(f"if ({self.has}[{c}]) {{")
        em.indent(1)
        cur = [f"{k}[{c}]" for k in self.carry]
        emit_combine(em, self.comb, left, cur, cur)
        em.indent(-1)
        em.line("} else {")
        for k, v in zip(self.carry, left, strict=True):
            em.line(f"    {k}[{c}] = {v};")
        em.line("}")
        em.line(f"{self.has}[{c}] = true;")

    def serial(self) -> None:
        em, n = self.em, self.n
        c = em.fresh("msl_c")
        self.loop(c, self.groups)
        first = n - 1 if self.reverse else 0
        for out, src in zip(self.outs, self.srcs, strict=True):
            em.line(f"{out}[{self.reg(c, f'{first}u')}] = {src}[{self.reg(c, f'{first}u')}];")
        if n > 1:
            t = em.fresh("msl_t")
            self.loop(t, n, 1)
            s, prev = (f"({n - 1}u - {t})", f"({n}u - {t})") if self.reverse else (t, f"({t} - 1u)")
            emit_combine(em, self.comb, [f"{o}[{self.reg(c, prev)}]" for o in self.outs],
                         [f"{x}[{self.reg(c, s)}]" for x in self.srcs],
                         [f"{o}[{self.reg(c, s)}]" for o in self.outs])
            self.end()
        last = 0 if self.reverse else n - 1
        for tot, out in zip(self.tot, self.outs, strict=True):
            em.line(f"{tot}[{c}] = {out}[{self.reg(c, f'{last}u')}];")
        em.line(f"{self.has}[{c}] = false;")
        self.end()

    def lane_step(self, bit: int) -> None:
        em, mask = self.em, 1 << bit
        c = em.fresh("msl_c")
        self.loop(c, self.groups)
        other = []
        for tot, ct in zip(self.tot, self.comb.ctypes, strict=True):
            o = em.fresh("msl_other")
            em.line(f"{ct} {o} = {shuffle_xor(em, f'{tot}[{c}]', mask)};")
            other.append(o)
        late = em.fresh("msl_late")  # this lane is in the later half of the block
        em.line(f"bool {late} = ({LANE} & {mask}u) {'==' if self.reverse else '!='} 0u;")
        em.line(f"if ({late}) {{")
        em.indent(1)
        self.add_carry(c, other)
        self.end()
        mine = [f"{t}[{c}]" for t in self.tot]
        emit_combine(em, self.comb, [f"{late} ? {o} : {m}" for o, m in zip(other, mine,
                                                                           strict=True)],
                     [f"{late} ? {m} : {o}" for o, m in zip(other, mine, strict=True)], mine)
        self.end()
        self.done_lanes |= mask

    def reg_step(self, bit: int) -> None:
        em = self.em
        cmask = 1 << self.group_bits.index(bit)
        c = em.fresh("msl_c")
        self.loop(c, self.groups)
        em.line(f"if (({c} & {cmask}u) != 0u) continue;")
        early, late = em.fresh("msl_early"), em.fresh("msl_late")
        pair = (f"{c} | {cmask}u", c) if self.reverse else (c, f"{c} | {cmask}u")
        em.line(f"uint {early} = {pair[0]};")
        em.line(f"uint {late} = {pair[1]};")
        first = [f"{t}[{early}]" for t in self.tot]
        self.add_carry(late, first)
        emit_combine(em, self.comb, first, [f"{t}[{late}]" for t in self.tot], first)
        for t in self.tot:
            em.line(f"{t}[{late}] = {t}[{early}];")
        self.end()

    def warp_pass(self, warp_bits: list[int]) -> None:
        em, comb, k_count = self.em, self.comb, 1 << len(warp_bits)
        lanes, warps = thread_bits(self.plan, self.done_lanes, self.plan.mask("warp", warp_bits))
        q_count = 1 << (len(lanes) + len(warps))
        q, k, pos = em.fresh("msl_q"), em.fresh("msl_k"), em.fresh("msl_pos")
        em.line(f"uint {q} = {pext_expr(LANE, lanes)} | ({pext_expr(WARP, warps)} << "
                f"{len(lanes)}u);")
        em.line(f"uint {k} = {pext_expr(WARP, warp_bits)};")
        em.line(f"uint {pos} = {f'{k_count - 1}u - {k}' if self.reverse else k};")
        batch = batch_size(comb.ctypes, k_count * q_count, self.groups)
        for c0 in range(0, self.groups, batch):
            b = min(batch, self.groups - c0)
            bufs = scratch_arrays(em, comb.ctypes, k_count * q_count * b)
            c = em.fresh("msl_c")

            def slot(kk: str, c: str = c, b: int = b, c0: int = c0) -> str:
                return f"({kk} * {q_count}u + {q}) * {b}u + ({c} - {c0}u)"

            def at(p: str) -> str:
                return slot(f"({k_count - 1}u - {p})" if self.reverse else p)
            publish(em, bufs, self.tot, slot(k), c, c0, b, self.done_lanes, "total")
            self.loop(c, c0 + b, c0)
            run, before = [], []
            for buf, ct in zip(bufs, comb.ctypes, strict=True):
                r, e = em.fresh("msl_run"), em.fresh("msl_before")
                em.line(f"{ct} {r} = {buf}[{at('0u')}];")
                em.line(f"{ct} {e} = {r};")
                run.append(r)
                before.append(e)
            p = em.fresh("msl_p")
            self.loop(p, k_count, 1)
            for r, e in zip(run, before, strict=True):
                em.line(f"if ({p} == {pos}) {e} = {r};  // the simdgroups before this one")
            emit_combine(em, comb, run, [f"{buf}[{at(p)}]" for buf in bufs], run)
            self.end()
            em.line(f"if ({pos} > 0u) {{")
            em.indent(1)
            self.add_carry(c, before)
            self.end()
            for tot, r in zip(self.tot, run, strict=True):
                em.line(f"{tot}[{c}] = {r};")
            self.end()

    def finish(self) -> None:
        em = self.em
        c, s = em.fresh("msl_c"), em.fresh("msl_s")
        self.loop(c, self.groups)
        em.line(f"if (!{self.has}[{c}]) continue;")
        self.loop(s, self.n)
        cur = [f"{o}[{self.reg(c, s)}]" for o in self.outs]
        emit_combine(em, self.comb, [f"{k}[{c}]" for k in self.carry], cur, cur)
        self.end()
        self.end()

    def run(self) -> None:
        self.serial()
        steps = list(self.steps)
        while steps:
            step = steps.pop(0)
            if step.kind == "lane":
                self.lane_step(step.bit)
            elif step.kind == "reg":
                self.reg_step(step.bit)
            else:
                run = [step.bit]
                while steps and steps[0].kind == "warp":
                    run.append(steps.pop(0).bit)
                self.warp_pass(run)
        self.finish()


@lowers("tt.scan")
def scan(em: Emitter, op: Op) -> None:
    axis = op.attrs.get("axis")
    if not isinstance(axis, int):
        em.fail(f"scan axis {axis!r}")
    comb = combine_of(em, op)
    plan = plan_of(em, op, axis, list(op.operands[1:]) + list(op.results),
                   "tt.scan operands/results in different layouts", "scan")
    _Scan(em, op, comb, plan, bool(op.attrs.get("reverse", False))).run()
