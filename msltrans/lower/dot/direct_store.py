"""A resident K loop's accumulators stored from their fragments straight to device memory.

The pattern (tutorial 03's epilogue): the loop result, maybe rounded by a round-to-nearest
arith.truncf, re-laid out by a ttg.convert_layout whose only use is the value of a tt.store
in the loop's own block, the store's pointers and mask computed from ranges, splats and
constants by element-wise integer ops, shape ops and layout conversions (`_chain`). Then
nothing of C goes through threadgroup memory: at the store, the pointer and mask chains are
emitted again in the accumulators' own register layout (fragments.unit_layout: each lane's
`thread_elements()` pairs, MLX steel's `store_result`), the value's registers are the
matrices' elements rounded to the output type, and the store's own lowering writes them:

- a thread whose mask is true for all its elements (a tile wholly in bounds) stores without
  the mask: one branch, then the accesses (pairs of consecutive columns in one access where
  the pointers' axis facts allow);
- any other thread stores under the mask, element by element (MLX's `store_result_safe`).

Bits: the same fp32 accumulators, rounded by the same `out_t(float)` conversion the staged
read-back uses (or moved exactly, for fp32 outputs), written to the same addresses under
the same mask. Where the pattern does not hold, the loop's staged epilogue runs (resident.py:
C through the operand region, then the store's own layout).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, replace

from msltrans.ir.model import Block, Op, Value
from msltrans.ir.types import TensorType
from msltrans.lower.dot.fragments import linear_encoding, unit_layout
from msltrans.lower.dot.info import render
from msltrans.lower.dot.simdgroup import SimdPlan
from msltrans.lower.dot.state import DotState, prelower
from msltrans.lower.emitter import REG, Emitter
from msltrans.lower.registry import lowering_of

# Ops the pointer and mask chains may contain: element-wise integer ops, splat constants,
# shape ops that keep every element in its thread for any layout pair Triton gives them.
_ELEMENTWISE = {
    "tt.addptr", "arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui",
    "arith.remsi", "arith.remui", "arith.andi", "arith.ori", "arith.xori", "arith.shli",
    "arith.shrsi", "arith.shrui", "arith.cmpi", "arith.select", "arith.extsi", "arith.extui",
    "arith.trunci", "arith.minsi", "arith.maxsi", "arith.minui", "arith.maxui",
}
_ROOTS = {"tt.make_range", "tt.splat", "arith.constant"}
_staged: list[bool] = [False]


@contextlib.contextmanager
def staged_epilogue() -> Iterator[None]:
    """Tests and benchmarks: every resident loop leaves through the staged epilogue."""
    _staged.append(True)
    try:
        yield
    finally:
        _staged.pop()


@dataclass(frozen=True)
class DirectStore:
    store: Op
    value: Value  # the convert's result: the stored value
    out_t: str  # the stored element type
    layout_enc: str  # the accumulators' register layout (#ttg.linear text)
    chain: tuple[Op, ...]  # the pointer/mask ops, operands first
    targets: dict[Value, str]  # chain value -> its encoding in the re-emission
    tm: int
    tn: int
    slots: int


def _slice(parent: str, dim: int) -> str:
    return f"#ttg.slice<{{dim = {dim}, parent = {parent}}}>"


def _chain(em: Emitter, roots: list[Value], enc: str
           ) -> tuple[tuple[Op, ...], dict[Value, str]] | None:
    """The ops computing `roots` (tensors laid out in `enc` in the re-emission), operands
    first, and every tensor's encoding there; None when one is not re-computable."""
    targets: dict[Value, str] = {}
    order: list[Op] = []
    seen: set[int] = set()

    def visit(v: Value, target: str) -> bool:
        if not isinstance(v.type, TensorType):
            return True  # a scalar: its name is in scope at the store
        if targets.setdefault(v, target) != target:
            return False  # needed in two layouts
        op = em.producers.get(v.id)
        if op is None or len(op.results) != 1:
            return False  # a block argument (loop-carried), or a multi-result op
        if id(op) in seen:
            return True
        seen.add(id(op))
        name = op.name
        if name == "arith.constant" and not op.attrs.get("splat"):
            return False
        if name == "tt.expand_dims":
            ok = visit(op.operands[0], _slice(target, int(op.attrs["axis"])))
        elif name in ("ttg.convert_layout", "tt.broadcast") or name in _ELEMENTWISE \
                or name in _ROOTS:
            ok = all(visit(o, target) for o in op.operands)
        else:
            return False
        order.append(op)
        return ok

    if not all(visit(v, enc) for v in roots):
        return None
    return tuple(order), targets


def _block_of(em: Emitter, loop: Op) -> Block | None:
    """The block whose ops include `loop` (searched in the module)."""
    def search(blocks: tuple[Block, ...]) -> Block | None:
        for block in blocks:
            for op in block.ops:
                if op is loop:
                    return block
                for region in op.regions:
                    found = search(region.blocks)
                    if found is not None:
                        return found
        return None

    if em.module is None:
        return None
    for fn in em.module.functions:
        found = search(fn.body.blocks)
        if found is not None:
            return found
    return None


def _only_user(em: Emitter, v: Value) -> tuple[Op, int] | None:
    users = em.users.get(v.id, [])
    return users[0] if len(users) == 1 and em.uses.get(v.id) == 1 else None


def plan(em: Emitter, loop: Op, result: Value, p: SimdPlan, batch: int) -> DirectStore | None:
    """The direct store of loop result `result` (a resident accumulator with plan `p`), or
    None when the staged epilogue must run (module docstring)."""
    if batch != 1 or _staged[-1]:
        return None
    ll = unit_layout(p.tm, p.tn, p.units_n, p.units, p.num_warps)
    if ll is None or not isinstance(result.type, TensorType) or result.type.shape != ll.shape:
        return None
    value, out_t = result, "float"
    user = _only_user(em, value)
    if user is not None and user[0].name == "arith.truncf":
        narrow = user[0]
        if narrow.attrs.get("roundingmode") not in (None, "to_nearest_even") or \
                em.ctype(narrow.results[0]) not in ("half", "bfloat"):
            return None
        value, out_t = narrow.results[0], em.ctype(narrow.results[0])
        user = _only_user(em, value)
    if user is None or user[0].name != "ttg.convert_layout":
        return None
    value = user[0].results[0]
    user = _only_user(em, value)
    if user is None or user[0].name != "tt.store" or user[1] != 1:
        return None
    store = user[0]
    if len(store.operands) not in (2, 3) or store.attrs.get("isVolatile") \
            or store.attrs.get("boundaryCheck") \
            or not all(isinstance(v.type, TensorType) for v in store.operands):
        return None  # (a scalar mask: the staged epilogue)
    block = _block_of(em, loop)
    if block is None or not any(op is store for op in block.ops):
        return None  # the matrices are declared in the loop's block: the store must be there
    enc = linear_encoding(ll)
    found = _chain(em, [v for v in store.operands if v.id != value.id], enc)
    if found is None:
        return None
    chain, targets = found
    targets[value] = enc
    return DirectStore(store, value, out_t, enc, chain, targets, p.tm, p.tn, p.slots)


def defer(em: Emitter, d: DirectStore, mats: str) -> None:
    """After the loop: the convert (and truncf) produce nothing; the store does it all."""
    for op in (em.producers[d.value.id], em.producers.get(em.producers[d.value.id].operands[0].id)):
        if op is not None and op.name in ("ttg.convert_layout", "arith.truncf"):
            prelower(em, op)
    em.family(DotState).direct[id(d.store)] = (d, mats)


def take(em: Emitter, op: Op) -> bool:
    """tt.store `op`: when it is a deferred direct store, emit it and say so."""
    found = em.family(DotState).direct.pop(id(op), None)
    if found is None:
        return False
    emit(em, *found)
    return True


def emit(em: Emitter, d: DirectStore, mats: str) -> None:
    """At the store: the chain in the accumulators' layout, the value from the matrices, the
    store (unmasked where this thread's elements are all in bounds)."""
    store = lowering_of("tt.store")
    layouts = {v: em.layouts.of(TensorType(v.type.shape, v.type.element, enc))
               for v, enc in d.targets.items() if isinstance(v.type, TensorType)}
    em.line("// direct epilogue: the accumulators' fragments straight to device memory, "
            "no threadgroup memory (lower/dot/direct_store.py)")
    em.line("{")
    em.indent(1)
    with em.relaid(layouts):
        for op in d.chain:
            if op.name == "ttg.convert_layout":  # the same layout on both sides now
                em.bind(op.results[0], em.name(op.operands[0]))
            else:
                em.emit_op(op)
        outer, em.op = em.op, d.store
        try:
            name = em.declare(d.value, "acc_frag")
            render(em, "fragments_out", name=name, mats=mats, slots=d.slots, tm=d.tm,
                   tn=d.tn, out_t=d.out_t)
            if len(d.store.operands) == 2:
                store(em, d.store)
            else:
                full = em.fresh("tile_in_bounds")
                mask = em.name(d.store.operands[2])
                render(em, "all_true", name=full, mask=mask, reg=REG,
                       regs=em.layout(d.value).regs)
                em.line(f"if ({full}) {{  // every element of this thread in bounds")
                em.indent(1)
                store(em, replace(d.store, operands=d.store.operands[:2]))
                em.indent(-1)
                em.line("} else {  // an edge tile: element by element under the mask")
                em.indent(1)
                start = len(em.lines)
                store(em, d.store)
                # the edge branch's accesses are the same store's: count the interior's
                for i in range(start, len(em.lines)):
                    em.lines[i] = em.lines[i].replace("// msltrans-mem:", "// msltrans-mem-edge:")
                em.indent(-1)
                em.line("}")
        finally:
            em.op = outer
    em.indent(-1)
    em.line("}")
