"""tt.reduce on any axis of any distributed layout, N operands, any combine region.

Fixed combine order (docs/reductions.md), the same in every thread, so replicated results
agree bit for bit and runs are deterministic:
  1. in the thread: the registers of one output element, left fold in increasing axis order;
  2. across lanes: a butterfly over the lane bits along the axis, least significant first;
     the lane whose bit is clear (the lower axis positions) is always the left operand, so
     both partners compute the same value (a commutative combine, one op such as + or max,
     gives the same bits either way and skips the operand-order selects);
  3. across simdgroups: every simdgroup's partial goes to threadgroup scratch; each thread
     then folds the partials left to right in increasing axis order.
Standard combines are not special-cased (no simd_sum): the region is emitted as written (a
max/min combine whose reduction's zero sign no use sees is plain fmax/fmin:
msltrans/analysis/zero_sign.py).
"""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.ir.types import TensorType
from msltrans.layout import LinearLayout
from msltrans.lower.emitter import LANE, WARP, Emitter
from msltrans.lower.reduce.axis_plan import AxisPlan, pext_expr, thread_bits
from msltrans.lower.reduce.combine import (
    Combine,
    batch_size,
    combine_of,
    emit_combine,
    is_commutative,
    plan_of,
    publish,
    register_table,
    scratch_arrays,
    shuffle_xor,
)
from msltrans.lower.registry import lowers


def _in_thread(em: Emitter, comb: Combine, plan: AxisPlan, srcs: list[str],
               accs: list[str], groups: int) -> None:
    along = plan.axis_bits("reg")
    n = 1 << len(along)
    regs = [plan.register(g, s, along) for g in range(groups) for s in range(n)]
    g = em.fresh("msl_g")
    if regs == list(range(len(regs))):
        def reg(i: str) -> str:
            return i
    else:
        table = register_table(em, "reduce_regs", regs)

        def reg(i: str) -> str:
            return f"{table}[{i}]"
    em.line(f"msl_unroll for (uint {g} = 0; {g} < {groups}u; ++{g}) {{")
    em.indent(1)
    for src, acc in zip(srcs, accs, strict=True):
        em.line(f"{acc}[{g}] = {src}[{reg(f'{g} * {n}u')}];")
    if n > 1:
        s = em.fresh("msl_s")
        em.line(f"msl_unroll for (uint {s} = 1; {s} < {n}u; ++{s}) {{")
        em.indent(1)
        cur = [f"{acc}[{g}]" for acc in accs]
        emit_combine(em, comb, cur, [f"{src}[{reg(f'{g} * {n}u + {s}')}]" for src in srcs],
                     cur)
        em.indent(-1)
        em.line("}")
    em.indent(-1)
    em.line("}")


def _across_lanes(em: Emitter, comb: Combine, plan: AxisPlan, accs: list[str],
                  groups: int) -> None:
    commutative = is_commutative(comb)
    for bit in plan.axis_bits("lane"):
        mask = 1 << bit
        g = em.fresh("msl_g")
        em.line(f"msl_unroll for (uint {g} = 0; {g} < {groups}u; ++{g}) {{  // lane bit {bit}")
        em.indent(1)
        mine, other = [], []
        for acc, c in zip(accs, comb.ctypes, strict=True):
            o = em.fresh("msl_other")
            em.line(f"{c} {o} = {shuffle_xor(em, f'{acc}[{g}]', mask)};")
            mine.append(f"{acc}[{g}]")
            other.append(o)
        if commutative:  # both partners get the same bits in either operand order
            emit_combine(em, comb, mine, other, mine)
        else:  # the lower positions on the left, in both partners
            low = em.fresh("msl_low")
            em.line(f"bool {low} = ({LANE} & {mask}u) == 0u;")
            emit_combine(em, comb,
                         [f"{low} ? {m} : {o}" for m, o in zip(mine, other, strict=True)],
                         [f"{low} ? {o} : {m}" for m, o in zip(mine, other, strict=True)], mine)
        em.indent(-1)
        em.line("}")


def _across_warps(em: Emitter, comb: Combine, plan: AxisPlan, accs: list[str],
                  groups: int) -> None:
    warp_bits = plan.axis_bits("warp")
    if not warp_bits:
        return
    k_count = 1 << len(warp_bits)
    lane_axis = plan.mask("lane")
    lanes, warps = thread_bits(plan, lane_axis, plan.mask("warp"))
    q_count = 1 << (len(lanes) + len(warps))
    q, k = em.fresh("msl_q"), em.fresh("msl_k")
    em.line(f"uint {q} = {pext_expr(LANE, lanes)} | ({pext_expr(WARP, warps)} << {len(lanes)}u);")
    em.line(f"uint {k} = {pext_expr(WARP, warp_bits)};")
    batch = batch_size(comb.ctypes, k_count * q_count, groups)
    for g0 in range(0, groups, batch):
        b = min(batch, groups - g0)
        bufs = scratch_arrays(em, comb.ctypes, k_count * q_count * b)
        g = em.fresh("msl_g")

        def slot(kk: str, g: str = g, b: int = b, g0: int = g0) -> str:
            return f"({kk} * {q_count}u + {q}) * {b}u + ({g} - {g0}u)"
        publish(em, bufs, accs, slot(k), g, g0, b, lane_axis, "simdgroup partial")
        em.line(f"msl_unroll for (uint {g} = {g0}u; {g} < {g0 + b}u; ++{g}) {{")
        em.indent(1)
        for buf, acc in zip(bufs, accs, strict=True):
            em.line(f"{acc}[{g}] = {buf}[{slot('0u')}];")
        kk = em.fresh("msl_kk")
        em.line(f"msl_unroll for (uint {kk} = 1; {kk} < {k_count}u; ++{kk}) {{")
        em.indent(1)
        cur = [f"{acc}[{g}]" for acc in accs]
        emit_combine(em, comb, cur, [f"{buf}[{slot(kk)}]" for buf in bufs], cur)
        em.indent(-1)
        em.line("}")
        em.indent(-1)
        em.line("}")


def _drop(basis: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return basis[:axis] + basis[axis + 1:]


def _group_of_output(em: Emitter, plan: AxisPlan, out_ll: LinearLayout,
                     groups: int) -> list[int]:
    """For each output register, the register group that reduced to it."""
    ll, axis = plan.ll, plan.axis
    for kind in ("lane", "warp"):
        mine, theirs = getattr(out_ll, kind), getattr(ll, kind)
        if len(mine) != len(theirs) or any(
                tuple(o) != _drop(i, axis) for o, i in zip(mine, theirs, strict=True)):
            em.fail(f"reduce result layout does not slice the input layout ({kind}s differ)",
                    "expected the #slice of the input layout")
    along = plan.axis_bits("reg")
    by_coord: dict[tuple[int, ...], int] = {}
    for g in range(groups):
        by_coord.setdefault(_drop(ll.coord(plan.register(g, 0, along), 0, 0), axis), g)
    out = []
    for r in range(out_ll.num_regs):
        c = out_ll.coord(r, 0, 0)
        if c not in by_coord:
            em.fail("reduce result register without a matching input row",
                    "expected the #slice of the input layout")
        out.append(by_coord[c])
    return out


def _results(em: Emitter, op: Op, plan: AxisPlan, accs: list[str], groups: int) -> None:
    for res, acc in zip(op.results, accs, strict=True):
        if not isinstance(res.type, TensorType):
            name = em.fresh(res.name)
            em.bind(res, name)
            em.line(f"{em.ctype(res)} {name} = {acc}[0];")  # every group holds the total
            continue
        mapping = _group_of_output(em, plan, em.layout(res).ll, groups)
        name = em.declare(res)
        if mapping == list(range(groups)):
            em.render("element_loop", reg="msl_r", regs=groups,
                      body=f"{name}[msl_r] = {acc}[msl_r];")
        else:
            for r, g in enumerate(mapping):
                em.line(f"{name}[{r}] = {acc}[{g}];")


@lowers("tt.reduce")
def reduce(em: Emitter, op: Op) -> None:
    axis = op.attrs.get("axis")
    if not isinstance(axis, int):
        em.fail(f"reduce axis {axis!r}")
    comb = combine_of(em, op)
    plan = plan_of(em, op, axis, op.operands[1:], "tt.reduce operands in different layouts",
                   "reduce")
    groups = 1 << len(plan.other_regs)
    srcs = [em.name(v) for v in op.operands]
    accs = []
    for c in comb.ctypes:
        acc = em.fresh("msl_acc")
        em.line(f"{c} {acc}[{groups}];")
        accs.append(acc)
    _in_thread(em, comb, plan, srcs, accs, groups)
    _across_lanes(em, comb, plan, accs, groups)
    _across_warps(em, comb, plan, accs, groups)
    _results(em, op, plan, accs, groups)
