"""K-loop accumulators kept in simdgroup matrices (the helper of ops_dot / ops_scf, no op).

The pattern (tutorial 03's K loop), proved from the IR by `resident_accumulators` — the one
place that decides: an scf.for iter arg whose ONLY use is the C operand of a tt.dot directly
in the loop body, that dot taking the simdgroup path with an fp32 accumulator, and the dot's
result's ONLY use being the body's scf.yield into that same iter arg. Then the accumulator
never needs to exist in registers inside the loop:

- before the loop, each simdgroup loads its units' accumulators from the initial value
  (staged once through scratch) or fills them with +0.0 when it is a +0.0 splat constant;
- each K step stages A and B only and multiplies into those matrices (no C staging, no
  store, no D read-back: 2 barriers per step instead of 3);
- after the loop, the matrices are stored to scratch once and read back into the loop
  result's register layout.

Bits: the per-dot path loads C from scratch as fp32, runs the k-steps and stores fp32 back
(exact moves), so the carried value between steps is the same fp32 number either way and
the chain over k stays one in-order chain. fp16 accumulators (rounded at the end of every
tt.dot) do not match the pattern, nor do accumulators with any other use (`dot(...) * 2`,
reading acc in the body): those keep the per-dot path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from msltrans.errors import MetalNonRecoverableError
from msltrans.ir.model import Op, Value
from msltrans.lower.dot import direct_store, staging
from msltrans.lower.dot.choose import choose
from msltrans.lower.dot.info import DotInfo, check, render
from msltrans.lower.dot.simdgroup import (
    SimdPlan,
    c_tile,
    is_zero_splat,
    mma_params,
    pass_bytes,
    pass_rows,
    stage_operands,
    stats,
)
from msltrans.lower.dot.state import prelower
from msltrans.lower.dot.state import resident as _active
from msltrans.lower.emitter import Emitter

# Resident accumulators per simdgroup (slots x TM x TN): 32 = 64 fp32 registers per lane,
# enough for 128x64 / 64x128 tiles with 4 simdgroups and 128x128 with 8. More would spill:
# keep the per-dot path.
MAX_RESIDENT_TILES = 32


@dataclass(frozen=True)
class Resident:
    """One loop-carried accumulator that stays in simdgroup matrices."""

    index: int  # the iter arg's position among the loop's iter args
    init: Value  # the loop operand giving its initial value
    dot: Op
    info: DotInfo
    plan: SimdPlan

    @property
    def slots(self) -> int:
        return self.plan.slots

    @property
    def passes(self) -> int:
        """Row passes moving C through scratch (before and after the loop)."""
        return len(pass_rows(self.info, self.plan))


def _simdgroup_dot(em: Emitter, dot: Op) -> tuple[DotInfo, SimdPlan] | None:
    """(info, plan) when `dot` lowers on the simdgroup path; None otherwise (or when the dot
    refuses: it does so itself, at its own location, when it is emitted)."""
    outer = em.op
    try:
        em.op = dot
        info = check(em, dot)
        path, plan = choose(em, info, resident_loop=True)
    except MetalNonRecoverableError:
        return None
    finally:
        em.op = outer
    if path != "simdgroup" or not isinstance(plan, SimdPlan):
        return None
    return info, plan


def resident_accumulators(em: Emitter, loop: Op) -> list[Resident]:
    """THE decision: the iter args of scf.for `loop` whose accumulator stays in simdgroup
    matrices across the K loop (see the module docstring for the pattern)."""
    if len(loop.regions) != 1 or len(loop.regions[0].blocks) != 1:
        return []
    block = loop.regions[0].blocks[0]
    term = block.ops[-1] if block.ops and block.ops[-1].name == "scf.yield" else None
    if term is None:
        return []
    inits = loop.operands[3:]
    found = []
    for i, arg in enumerate(block.args[1:]):
        if not em.is_tensor(arg) or em.uses.get(arg.id) != 1 or i >= len(term.operands):
            continue
        dot = next((op for op in block.ops if op.name == "tt.dot" and len(op.operands) == 3
                    and op.operands[2].id == arg.id), None)
        if dot is None or len(dot.results) != 1:
            continue  # the one use is not a dot's C directly in the body
        out = dot.results[0]
        if em.uses.get(out.id) != 1 or term.operands[i].id != out.id:
            continue  # the result is used otherwise, or yielded elsewhere
        chosen = _simdgroup_dot(em, dot)
        if chosen is None:
            continue
        info, plan = chosen
        if info.out_t != "float" or info.c.type != inits[i].type:
            continue  # fp16 accumulators round at the end of every tt.dot
        r = Resident(i, inits[i], dot, info, plan)
        if r.slots * plan.tm * plan.tn <= MAX_RESIDENT_TILES and r.passes:
            found.append(r)
    return found


@dataclass
class ResidentLoop:
    """The resident accumulators of one scf.for being emitted (ops_scf's handle)."""

    loop: Op | None = None
    # (r, its matrices, the carried variable, its direct store or None)
    members: list[tuple[Resident, str, str, direct_store.DirectStore | None]] = \
        field(default_factory=list)

    @property
    def indices(self) -> set[int]:
        """Iter args the loop must not copy in: the prologue initialised their matrices."""
        return {r.index for r, _, _, _ in self.members}

    def leave(self, em: Emitter) -> None:
        """After the loop: matrices -> scratch -> the loop result's registers (in row
        passes when C does not fit at once), or nothing here when the store takes the
        matrices straight to device memory (direct_store.py)."""
        for r, mats, carried, direct in self.members:
            if direct is not None:
                em.line(f"// resident accumulator {mats}: stored from its fragments by the "
                        "tt.store below")
                direct_store.defer(em, direct, mats)
                _active(em).pop(r.info.out.id, None)
                continue
            # The result's only use re-lays it out (e.g. for a coalesced store): read it
            # back in that layout directly, one trip through scratch instead of two.
            convert, narrow = self._only_convert(em, r)
            out_t = "float"
            if convert is not None:
                L_o = em.layout(convert.results[0])
                carried = em.declare(convert.results[0], convert.results[0].name or "acc_out")
                prelower(em, convert)
                if narrow is not None:  # the read-back rounds, as the truncf would
                    prelower(em, narrow)
                    out_t = em.ctype(narrow.results[0])
            else:
                L_o = em.layout(r.info.out)
            em.line(f"// resident accumulator {mats} -> {carried} (loop result)")
            for rows in pass_rows(r.info, r.plan):
                _open_scratch(em, r)
                render(em, "simdgroup_mma", p=mma_params(r.info, r.plan, init="", steps=False,
                                                         store=True, acc=mats, rows=rows))
                em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // all tiles stored")
                staging.read_back(em, carried, L_o, c_tile(r.info, r.plan), out_t, rows)
                em.indent(-1)
                em.line("}")
            _active(em).pop(r.info.out.id, None)

    def _only_convert(self, em: Emitter, r: Resident) -> tuple[Op | None, Op | None]:
        """(the ttg.convert_layout that is the loop result's only use, None), or (that
        convert, the arith.truncf between them) when the result's only use is a
        round-to-nearest-even truncf whose only use is the convert (a matmul storing fp16 or
        bf16); (None, None) otherwise."""
        if self.loop is None:
            return None, None
        value = self.loop.results[r.index]
        narrow = None
        users = em.users.get(value.id, [])
        if len(users) == 1 and users[0][0].name == "arith.truncf" \
                and users[0][0].attrs.get("roundingmode") in (None, "to_nearest_even") \
                and em.ctype(users[0][0].results[0]) in ("half", "bfloat"):
            narrow = users[0][0]
            value = narrow.results[0]
            users = em.users.get(value.id, [])
        if len(users) != 1 or users[0][0].name != "ttg.convert_layout":
            return None, None
        convert = users[0][0]
        if em.ctype(convert.results[0]) != em.ctype(value):
            return None, None
        return convert, narrow


def _open_scratch(em: Emitter, r: Resident) -> None:
    """Open a scope holding the accumulator's float scratch `sc`, once earlier readers of
    the scratch are done (the caller closes it)."""
    em.line("{")
    em.indent(1)
    scratch = em.need_scratch(pass_bytes(r.info, r.plan))
    render(em, "scratch_region", ctype="float", name="sc", scratch=scratch, byte_offset=0)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // earlier scratch "
            "readers done")


def enter_loop(em: Emitter, loop: Op, carried: list[str]) -> ResidentLoop:
    """Before the loop: declare and initialise the matrices of every resident accumulator
    (`carried` are the loop's carried variables, one per iter arg)."""
    handle = ResidentLoop(loop)
    for r in resident_accumulators(em, loop):
        mats = em.fresh("acc_tiles")
        p = r.plan
        render(em, "resident_decl", name=mats, slots=r.slots, tm=p.tm, tn=p.tn)
        if is_zero_splat(em, r.init):
            render(em, "simdgroup_mma", p=mma_params(r.info, p, init="fill", steps=False,
                                                     store=False, acc=mats))
        else:
            for rows in pass_rows(r.info, p):
                _open_scratch(em, r)
                staging.stage(em, r.init, c_tile(r.info, p), "float", rows)
                em.line("threadgroup_barrier(mem_flags::mem_threadgroup);")
                render(em, "simdgroup_mma", p=mma_params(r.info, p, init="load", steps=False,
                                                         store=False, acc=mats, rows=rows))
                em.indent(-1)
                em.line("}")
        direct = direct_store.plan(em, loop, loop.results[r.index], p, r.info.batch)
        handle.members.append((r, mats, carried[r.index], direct))
        _active(em)[r.info.out.id] = (r, mats, carried[r.index], direct)
    return handle


def resident_step(em: Emitter, op: Op
                  ) -> tuple[Resident, str, str, direct_store.DirectStore | None] | None:
    """(accumulator, its matrices, the carried variable, its direct store) of tt.dot `op`,
    when its loop keeps the accumulator resident."""
    return _active(em).get(op.results[0].id)


def emit_step(em: Emitter, info: DotInfo, r: Resident, mats: str, carried: str,
              direct: direct_store.DirectStore | None) -> None:
    """One K step: stage A and B, multiply into the loop's matrices. The dot's result names
    the carried variable, so the loop's yield copies nothing (its registers are stale inside
    the loop; nothing reads them: the pattern proves it)."""
    p = r.plan
    scratch = em.need_scratch(p.ab_bytes)
    L_o = em.layout(info.out)
    em.bind(info.out, carried)
    items = dict(stats(info, p, L_o.regs))
    items.update(scratch_bytes=p.ab_bytes, barriers=2, c="resident",
                 passes=r.passes, epilogue="direct" if direct else "staged")
    render(em, "stats", items=list(items.items()))
    em.line("{")
    em.indent(1)
    for name, off in (("sa", 0), ("sb", p.a_bytes)):
        render(em, "scratch_region", ctype=info.in_t, name=name, scratch=scratch,
               byte_offset=off)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // earlier scratch readers done")
    stage_operands(em, info, p)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);")
    render(em, "simdgroup_mma", p=mma_params(info, p, init="", steps=True, store=False,
                                             acc=mats))
    em.indent(-1)
    em.line("}")
