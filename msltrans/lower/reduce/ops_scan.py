"""tt.scan (inclusive; forward or reverse) on any axis, N operands, any combine region.

The order of combination is Triton's NVIDIA lowering (ScanOpToLLVM.cpp), operation for
operation, so floating scans give the bits Triton's CUDA backend gives (docs/reductions.md).
The axis coordinate is split as Triton's ScanLoweringHelper splits it:
  pos = s + S * (lane + L * (warp + W * block))
S = contiguous elements per thread (its getContigPerThread), L lanes and W simdgroups along
the axis, B = the register repeats above them. Per thread and per column off the axis:
  1. serial: each chunk of S registers is folded left to right (P);
  2. lanes: Hillis-Steele on the chunk totals, `f(from lane - d, mine)` for d = 1, 2, ... L/2;
  3. simdgroups (W > 1): the warp totals go through threadgroup scratch and every thread
     folds them serially, block after block; one warp (W = 1): the last lane's value of a
     block is the carry of the next block;
  4. the chunk's last element is `f(carry, H)`, the others `f(previous lane's last, P)`.
`reverse` is Triton's flip(scan(flip)): the same plan on mirrored positions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from msltrans.ir.model import Op
from msltrans.layout import LinearLayout, _parse_params
from msltrans.lower.emitter import LANE, WARP, Emitter
from msltrans.lower.reduce.axis_plan import AxisPlan, pext_expr, spread, thread_bits
from msltrans.lower.reduce.combine import (
    Combine,
    barrier,
    batch_size,
    combine_of,
    emit_combine,
    plan_of,
    register_table,
    scratch_arrays,
)
from msltrans.lower.registry import lowers


def _order(encoding: str, rank: int) -> list[int]:
    """The dim order Triton's scan helper uses: a #blocked's `order`; for a #slice the
    parent's without the sliced dim; else minor-most last (Triton scans only #blocked)."""
    text = encoding.strip()
    if text.startswith("#ttg.blocked"):
        return [int(d) for d in _parse_params(text)["order"]]
    if text.startswith("#ttg.slice"):
        attrs = _parse_params(text)
        dim = int(attrs["dim"])
        parent = _order(str(attrs["parent"]), rank + 1)
        return [d - (d > dim) for d in parent if d != dim]
    return list(reversed(range(rank)))


def contig_per_thread(ll: LinearLayout, order: list[int]) -> list[int]:
    """Triton's getContigPerThread: walking the register bases in order, the run of bases
    1, 2, 4, ... along each dim in `order` (broadcast registers are already dropped)."""
    rank = len(ll.shape)
    contig = [1] * rank
    it = 0
    for d in order:
        while it < len(ll.reg) and ll.reg[it] == tuple(contig[d] if e == d else 0
                                                        for e in range(rank)):
            contig[d] *= 2
            it += 1
    return contig


def _pdep_expr(value: str, bits: list[int]) -> str:
    """MSL: bit i of `value` moved to position bits[i] (0 if no bits)."""
    if not bits:
        return "0u"
    if bits == list(range(bits[0], bits[0] + len(bits))):
        return f"(({value}) << {bits[0]}u)"
    return "(" + " | ".join(f"((({value}) >> {i}u) & 1u) << {b}u"
                            for i, b in enumerate(bits)) + ")"


@dataclass(frozen=True)
class _Split:
    chunk: list[int]  # register bits of s (axis order)
    lanes: list[int]  # lane bits along the axis
    warps: list[int]  # warp bits along the axis
    blocks: list[int]  # register bits of the repeats above the warps

    @property
    def sizes(self) -> tuple[int, int, int, int]:
        return (1 << len(self.chunk), 1 << len(self.lanes), 1 << len(self.warps),
                1 << len(self.blocks))


def split_axis(em: Emitter, plan: AxisPlan, contig: int) -> _Split:
    bits = list(plan.bits)
    n_chunk = contig.bit_length() - 1
    chunk = [b.bit for b in bits[:n_chunk]]
    rest = bits[n_chunk:]
    kinds = "".join(b.kind[0] for b in rest)  # r / l / w
    if any(b.kind != "reg" for b in bits[:n_chunk]) or not re.fullmatch("l*w*r*", kinds):
        held = ", ".join({"r": "register", "l": "lane", "w": "simdgroup"}[k] for k in kinds)
        em.fail(f"scan axis {plan.axis}: above its {1 << n_chunk} contiguous register(s) the "
                f"axis bits (lowest first) are held by {held}; Triton's scan order needs "
                "lanes, then simdgroups, then register repeats",
                "scan a #blocked tensor (or convert_layout to one first)")
    lanes, warps = kinds.count("l"), kinds.count("w")
    return _Split(chunk, [b.bit for b in rest[:lanes]],
                  [b.bit for b in rest[lanes:lanes + warps]],
                  [b.bit for b in rest[lanes + warps:]])


class _Scan:
    def __init__(self, em: Emitter, op: Op, comb: Combine, plan: AxisPlan, split: _Split,
                 reverse: bool):
        self.em, self.comb, self.plan, self.split, self.rev = em, comb, plan, split, reverse
        self.S, self.L, self.W, self.B = split.sizes
        others = list(plan.other_regs)
        self.K = (1 << len(others)) * self.B  # chunks per thread: column-major, block-minor
        self.srcs = [em.name(v) for v in op.operands]
        self.outs = [em.declare(v) for v in op.results]
        regs = []
        for o in range(1 << len(others)):
            for bb in range(self.B):
                b = self.B - 1 - bb if reverse else bb
                for ss in range(self.S):
                    s = self.S - 1 - ss if reverse else ss
                    regs.append(spread(o, others) | spread(b, split.blocks)
                                | spread(s, split.chunk))
        self.table = register_table(em, "scan_regs", regs)
        self.lp = self._coord("msl_lp", LANE, split.lanes, self.L)
        self.wp = self._coord("msl_wp", WARP, split.warps, self.W)

    # ---- helpers ------------------------------------------------------------------------
    def _coord(self, hint: str, var: str, bits: list[int], size: int) -> str:
        """This thread's position along the axis in scan order (mirrored for reverse)."""
        name = self.em.fresh(hint)
        raw = pext_expr(var, bits)
        self.em.line(f"uint {name} = {f'{size - 1}u - {raw}' if self.rev else raw};")
        return name

    def reg(self, k: str, s: int | str) -> str:
        return f"{self.table}[{k} * {self.S}u + {s}]"

    def at(self, arrays: list[str], k: str, s: int | str) -> list[str]:
        return [f"{a}[{self.reg(k, s)}]" for a in arrays]

    def loop(self, var: str, count: int | str, first: int | str = 0) -> None:
        self.em.line(f"msl_unroll for (uint {var} = {first}u; {var} < {count}u; ++{var}) {{")
        self.em.indent(1)

    def end(self) -> None:
        self.em.indent(-1)
        self.em.line("}")

    def open_if(self, cond: str) -> None:
        self.em.line(f"if ({cond}) {{")
        self.em.indent(1)

    def vars(self, hint: str) -> list[str]:
        names = [self.em.fresh(hint) for _ in self.comb.ctypes]
        for c, n in zip(self.comb.ctypes, names, strict=True):
            self.em.line(f"{c} {n};")
        return names

    def assign(self, dst: list[str], src: list[str]) -> None:
        for d, s in zip(dst, src, strict=True):
            self.em.line(f"{d} = {s};")

    def lane_of(self, pos: str) -> str:
        """The lane holding scan position `pos` along the axis (same off-axis lane bits)."""
        mask = self.plan.mask("lane", self.split.lanes)
        phys = f"({self.L - 1}u - ({pos}))" if self.rev else f"({pos})"
        return f"ushort(({LANE} & {0xFFFFFFFF ^ mask}u) | {_pdep_expr(phys, self.split.lanes)})"

    def shuffle(self, value: str, lane: str) -> str:
        self.em.render("scan.shuffle_idx_helpers", prelude=True)
        return f"msl_shfl_idx({value}, {lane})"

    def prev_lane(self) -> str:
        """The lane one position earlier in scan order (this lane for the first)."""
        name = self.em.fresh("msl_prev_lane")
        self.em.line(f"ushort {name} = {self.lp} >= 1u ? {self.lane_of(f'{self.lp} - 1u')} : "
                     f"ushort({LANE});")
        return name

    # ---- the steps ----------------------------------------------------------------------
    def serial(self) -> None:
        em, k = self.em, self.em.fresh("msl_k")
        self.loop(k, self.K)
        self.assign(self.at(self.outs, k, "0u"), self.at(self.srcs, k, "0u"))
        if self.S > 1:
            s = em.fresh("msl_s")
            self.loop(s, self.S, 1)
            emit_combine(em, self.comb, self.at(self.outs, k, f"({s} - 1u)"),
                         self.at(self.srcs, k, s), self.at(self.outs, k, s))
            self.end()
        self.end()

    def warp_scan(self) -> None:
        """Hillis-Steele over the lanes along the axis on each chunk's last element."""
        em, last = self.em, f"{self.S - 1}u"
        d = 1
        while d <= self.L // 2:
            src = em.fresh("msl_src_lane")
            em.line(f"ushort {src} = {self.lp} >= {d}u ? {self.lane_of(f'{self.lp} - {d}u')} : "
                    f"ushort({LANE});")
            k = em.fresh("msl_k")
            self.loop(k, self.K)
            mine = self.at(self.outs, k, last)
            got = []
            for c, m in zip(self.comb.ctypes, mine, strict=True):
                g = em.fresh("msl_up")
                em.line(f"{c} {g} = {self.shuffle(m, src)};")
                got.append(g)
            self.open_if(f"{self.lp} >= {d}u")
            emit_combine(em, self.comb, got, mine, mine)
            self.end()
            self.end()
            d *= 2

    def finish_chunk(self, k: str, first: str, prev: list[str]) -> None:
        """Elements before the chunk's last: f(prev, P) (P alone for the very first thread)."""
        if self.S == 1:
            return
        em = self.em
        self.open_if(f"!({first})")
        s = em.fresh("msl_s")
        self.loop(s, self.S - 1)
        cur = self.at(self.outs, k, s)
        emit_combine(em, self.comb, prev, cur, cur)
        self.end()
        self.end()

    def across_warps(self) -> None:
        em, comb, W = self.em, self.comb, self.W
        lanes, warps = thread_bits(self.plan, self.plan.mask("lane", self.split.lanes),
                                   self.plan.mask("warp", self.split.warps))
        q_count = 1 << (len(lanes) + len(warps))
        q = em.fresh("msl_q")
        em.line(f"uint {q} = {pext_expr(LANE, lanes)} | ({pext_expr(WARP, warps)} << "
                f"{len(lanes)}u);")
        prev_lane = self.prev_lane() if self.L > 1 else None
        acc, masked = self.vars("msl_acc"), self.vars("msl_masked")
        last = f"{self.S - 1}u"
        batch = batch_size(comb.ctypes, W * q_count, self.K)
        for k0 in range(0, self.K, batch):
            nb = min(batch, self.K - k0)
            bufs = scratch_arrays(em, comb.ctypes, nb * W * q_count)
            k = em.fresh("msl_k")

            def slot(kk: str, w: str, k0: int = k0) -> str:
                return f"((({kk} - {k0}u) * {W}u + {w}) * {q_count}u + {q})"

            barrier(em)  # earlier users of the scratch are done
            self.open_if(f"{self.lp} == {self.L - 1}u")  # the warp total of each chunk
            self.loop(k, k0 + nb, k0)
            for buf, v in zip(bufs, self.at(self.outs, k, last), strict=True):
                em.line(f"{buf}[{slot(k, self.wp)}] = {v};")
            self.end()
            self.end()
            barrier(em)
            self.loop(k, k0 + nb, k0)
            bb, i = em.fresh("msl_b"), em.fresh("msl_i")
            em.line(f"uint {bb} = {k} % {self.B}u;")
            self.loop(i, W)
            part = [f"{buf}[{slot(k, i)}]" for buf in bufs]
            self.open_if(f"{bb} == 0u && {i} == 0u")
            self.assign(acc, part)
            self.assign(masked, acc)
            self.end()
            em.line("else {")
            em.indent(1)
            emit_combine(em, comb, acc, part, acc)
            self.open_if(f"{self.wp} >= {i} + 1u")
            self.assign(masked, acc)
            self.end()
            self.end()
            self.end()
            first = em.fresh("msl_first")
            em.line(f"bool {first} = {bb} == 0u && {self.wp} == 0u;")
            mine = self.at(self.outs, k, last)
            self.open_if(f"!{first}")
            emit_combine(em, comb, masked, mine, mine)
            self.end()
            prev = self.vars("msl_prev")
            if prev_lane is None:
                self.assign(prev, masked)
            else:
                self.assign(prev, [self.shuffle(m, prev_lane) for m in mine])
                self.open_if(f"{self.lp} == 0u")
                self.assign(prev, masked)
                self.end()
            self.finish_chunk(k, f"{first} && {self.lp} == 0u", prev)
            self.assign(masked, acc)
            self.end()

    def one_warp(self) -> None:
        em, last = self.em, f"{self.S - 1}u"
        prev_lane = self.prev_lane() if self.L > 1 else None
        last_lane = None
        if self.L > 1 and self.B > 1:
            last_lane = em.fresh("msl_last_lane")
            em.line(f"ushort {last_lane} = {self.lane_of(f'{self.L - 1}u')};")
        carry = self.vars("msl_carry")
        k, bb = em.fresh("msl_k"), em.fresh("msl_b")
        self.loop(k, self.K)
        em.line(f"uint {bb} = {k} % {self.B}u;")
        mine = self.at(self.outs, k, last)
        self.open_if(f"{bb} == 0u")
        self.assign(carry, mine)
        self.end()
        em.line("else {")
        em.indent(1)
        emit_combine(em, self.comb, carry, mine, mine)
        self.end()
        prev = self.vars("msl_prev")
        if prev_lane is not None:
            self.assign(prev, [self.shuffle(m, prev_lane) for m in mine])
            self.open_if(f"{self.lp} == 0u")
            self.assign(prev, carry)
            self.end()
        else:
            # One lane along the axis: the previous chunk ends at the carry. (Triton's code
            # combines this chunk's own last element here, which is not a scan; Triton's
            # passes never give a tl kernel such a layout: docs/reductions.md.)
            self.assign(prev, carry)
        if self.B > 1:
            self.assign(carry, [self.shuffle(m, last_lane) for m in mine]
                        if last_lane is not None else mine)
        self.finish_chunk(k, f"{bb} == 0u && {self.lp} == 0u", prev)
        self.end()

    def run(self) -> None:
        self.serial()
        self.warp_scan()
        if self.W > 1:
            self.across_warps()
        elif self.S > 1 or self.B > 1:
            self.one_warp()


@lowers("tt.scan")
def scan(em: Emitter, op: Op) -> None:
    axis = op.attrs.get("axis")
    if not isinstance(axis, int):
        em.fail(f"scan axis {axis!r}")
    comb = combine_of(em, op)
    plan = plan_of(em, op, axis, list(op.operands[1:]) + list(op.results),
                   "tt.scan operands/results in different layouts", "scan")
    ref = em.layout(op.operands[0])
    contig = contig_per_thread(ref.ll, _order(ref.encoding, len(ref.ll.shape)))[axis]
    split = split_axis(em, plan, contig)
    _Scan(em, op, comb, plan, split, bool(op.attrs.get("reverse", False))).run()
