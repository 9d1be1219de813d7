"""What tt.reduce and tt.scan share: the combine region, shuffles, tables, scratch slices.

The combine region (a Block with 2N scalar arguments ending in tt.reduce.return /
tt.scan.return) is emitted inline at every combine site through the normal op registry, so
any combine Triton accepts lowers op by op, and an op inside it that msltrans lacks is
refused exactly as it would be outside. Each site is one MSL block scope, so the names the
region's ops declare never clash; values captured from outside the region stay visible.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from msltrans.abi.limits import THREADGROUP_MEMORY_BYTES
from msltrans.ir.model import Block, Op, Value
from msltrans.lower.emitter import LANE, Emitter
from msltrans.lower.reduce.axis_plan import AxisPlan, plan_axis

_BYTES = {"bool": 1, "char": 1, "uchar": 1, "short": 2, "int": 4, "long": 8, "half": 2, "bfloat": 2,
          "float": 4}


def shuffle_xor(em: Emitter, value: str, mask: int) -> str:
    """Expression: `value` from the lane whose id differs in the bits of `mask`."""
    em.render("reduce.shuffle_xor_helpers", prelude=True)
    return f"msl_shfl_xor({value}, ushort({mask}))"


def register_table(em: Emitter, hint: str, values: list[int]) -> str:
    """A program-scope constant table of register ids; returns its name."""
    name = em.fresh(f"msl_{hint}")
    em.render("reduce.register_table", prelude=True, name=name, values=values)
    return name


def bytes_of(em: Emitter, ctype: str) -> int:
    if ctype not in _BYTES:
        em.fail(f"reduction/scan over elements of type {ctype}",
                "only integer, bool and float tensors")
    return _BYTES[ctype]


@dataclass(frozen=True)
class Combine:
    """The combine region of one tt.reduce / tt.scan with N operands of `ctypes`."""

    block: Block
    ctypes: tuple[str, ...]

    @property
    def n(self) -> int:
        return len(self.ctypes)


def combine_of(em: Emitter, op: Op) -> Combine:
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        em.fail("combine region with several blocks")
    block = op.regions[0].blocks[0]
    n = len(op.operands)
    if len(block.args) != 2 * n or not block.ops or not block.ops[-1].name.endswith(".return"):
        em.fail(f"combine region with {len(block.args)} arguments for {n} operands")
    if len(block.ops[-1].operands) != n:
        em.fail("combine region returns a different number of values than it has operands")
    ctypes = tuple(em.ctype(v) for v in op.operands)
    for c in ctypes:
        bytes_of(em, c)
    for arg, c in zip(block.args, ctypes + ctypes, strict=True):
        if em.ctype(arg) != c:
            em.fail(f"combine argument of type {em.ctype(arg)} for an operand of type {c}")
    return Combine(block, ctypes)


# Ops whose result does not depend on the order of their two operands, bit for bit (for
# floats: IEEE +, *, maxNum/minNum with -0 < +0 and maximum/minimum are symmetric; only the
# payload of a NaN made from two NaNs may follow the operand order, which no test reads).
COMMUTATIVE = frozenset({
    "arith.addf", "arith.mulf", "arith.addi", "arith.muli", "arith.maxnumf", "arith.minnumf",
    "arith.maximumf", "arith.minimumf", "arith.maxsi", "arith.minsi", "arith.maxui",
    "arith.minui", "arith.andi", "arith.ori", "arith.xori",
})


def is_commutative(comb: Combine) -> bool:
    """One operand, and the region is a single commutative op of its two arguments."""
    ops = comb.block.ops
    if comb.n != 1 or len(ops) != 2 or ops[0].name not in COMMUTATIVE:
        return False
    args = {a.id for a in comb.block.args}
    body, ret = ops
    return ({v.id for v in body.operands} == args and len(body.operands) == 2
            and [v.id for v in ret.operands] == [body.results[0].id])


def emit_combine(em: Emitter, comb: Combine, lhs: list[str], rhs: list[str],
                 out: list[str]) -> None:
    """out[i] = combine(lhs..., rhs...)[i], as one block scope. `lhs`/`rhs` are MSL
    expressions read once into fresh locals (they may be shuffles or scratch reads)."""
    em.line("{")
    em.indent(1)
    args = []
    for i, expr in enumerate(list(lhs) + list(rhs)):
        name = em.fresh("msl_a" if i < comb.n else "msl_b")
        em.line(f"{comb.ctypes[i % comb.n]} {name} = {expr};")
        args.append(name)
    for arg, name in zip(comb.block.args, args, strict=True):
        em.bind(arg, name)
    outer = em.op
    try:
        for inner in comb.block.ops[:-1]:
            em.emit_op(inner)
        results = [em.name(v) for v in comb.block.ops[-1].operands]
    finally:
        em.op = outer
    for dst, src in zip(out, results, strict=True):
        em.line(f"{dst} = {src};")
    em.indent(-1)
    em.line("}")


def scratch_arrays(em: Emitter, ctypes: tuple[str, ...], slots: int) -> list[str]:
    """One threadgroup array of `slots` elements per operand, side by side in the scratch."""
    offsets, total = [], 0
    for c in ctypes:
        offsets.append(total)
        total += (slots * _BYTES[c] + 15) // 16 * 16
    base = em.need_scratch(total)
    return [f"((threadgroup {c}*)((threadgroup char*){base} + {off}))"
            for c, off in zip(ctypes, offsets, strict=True)]


def batch_size(ctypes: tuple[str, ...], slots_per_group: int, groups: int) -> int:
    """How many register groups fit in the scratch at once (each batch is one pass);
    1 when even one does not fit (`need_scratch` then refuses)."""
    def total(b: int) -> int:
        return sum((b * slots_per_group * _BYTES[c] + 15) // 16 * 16 for c in ctypes)

    best = 1
    while best < groups and total(best + 1) <= THREADGROUP_MEMORY_BYTES:
        best += 1
    return best


def barrier(em: Emitter) -> None:
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);")


def plan_of(em: Emitter, op: Op, axis: int, same_layout: Iterable[Value], mismatch: str,
            verb: str) -> AxisPlan:
    """The axis plan of operand 0's layout; every value in `same_layout` must share it
    (`mismatch` is the refusal otherwise, `verb` names the op in the #blocked hint)."""
    ll = em.layout(op.operands[0]).ll
    for v in same_layout:
        if em.layout(v).ll != ll:
            em.fail(mismatch)
    plan = plan_axis(ll, axis)
    if isinstance(plan, str):
        em.fail(plan, f"{verb} a #blocked tensor (or convert_layout to one first)")
    return plan


def publish(em: Emitter, bufs: list[str], values: list[str], slot: str, g: str, g0: int,
            count: int, lane_mask: int, what: str) -> None:
    """Between two barriers, one lane per `lane_mask` class writes `values[..][g]` for the
    register groups g0 .. g0+count-1 to `bufs[..][slot]` (`slot` is in terms of `g`)."""
    barrier(em)  # earlier users of the scratch are done
    guard = f"({LANE} & {lane_mask}u) == 0u" if lane_mask else "true"
    em.line(f"if ({guard}) {{  // one writer per {what}")
    em.line(f"    msl_unroll for (uint {g} = {g0}u; {g} < {g0 + count}u; ++{g}) {{")
    for buf, value in zip(bufs, values, strict=True):
        em.line(f"        {buf}[{slot}] = {value}[{g}];")
    em.line("    }")
    em.line("}")
    barrier(em)
