"""A resident K loop's accumulators stored from their fragments straight to device memory.

The pattern (tutorial 03's epilogue, an Inductor GEMM template's bias and activation): the
loop result reaches exactly one tt.store, as its value, through element-wise ops and layout
conversions in the loop's own block (a round-to-nearest truncf, `acc + bias`, a leaky ReLU,
`acc * scale`), every use of every value on that path on it (`_path`); the store's pointers
and mask, and the path's other operands, come from ranges, splats, constants and loads by
element-wise ops, shape ops and layout conversions (`_chain`). Then nothing of C goes through
threadgroup memory: the ops on the path emit nothing where they stand; at the store, the
whole chain is emitted again in the accumulators' own register layout
(fragments.unit_layout: each lane's `thread_elements()` pairs, MLX steel's `store_result`;
Emitter.relaid), the loop result's registers being the matrices' elements (exact fp32
moves), and the store's own lowering writes the value:

- a thread whose mask is true for all its elements (a tile wholly in bounds) stores without
  the mask: one branch, then the accesses (pairs of consecutive columns in one access where
  the pointers' axis facts allow);
- any other thread stores under the mask, element by element (MLX's `store_result_safe`).

Bits: every op is the same element-wise lowering on the same fp32 values (the staged
epilogue reads the same accumulators back exactly), the store writes the same addresses
under the same mask. Operands off the path (pointers, masks, a bias load) are computed a
second time in the new layout; their first copies are dead code. Where the pattern does not
hold, the loop's staged epilogue runs (resident.py: C through the operand region, then the
store's own layout).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, replace

from msltrans.ir.model import Block, Op, Value
from msltrans.ir.types import TensorType
from msltrans.lower.dot.fragments import linear_encoding, unit_layout
from msltrans.lower.dot.info import render
from msltrans.lower.dot.simdgroup import SimdPlan
from msltrans.lower.dot.state import DotState
from msltrans.lower.dot.switch import Switch
from msltrans.lower.emitter import REG, Emitter
from msltrans.lower.registry import lowering_of

# Ops the chains may contain: element-wise ops (every arith and math op on tensors is one),
# Triton's element-wise ops, splat constants, shape ops that keep each element in its thread
# for any layout pair Triton gives them, and loads (only off the accumulator's own path).
_TT_ELEMENTWISE = {
    "tt.addptr", "tt.bitcast", "tt.fp_to_fp", "tt.clampf", "tt.precise_sqrt",
    "tt.precise_divf", "tt.mulhiui",
}
_SHAPE = {"ttg.convert_layout", "tt.broadcast", "tt.expand_dims"}
_ROOTS = {"tt.make_range", "tt.splat", "arith.constant"}


def _elementwise(op: Op) -> bool:
    return (op.name.startswith(("arith.", "math.")) or op.name in _TT_ELEMENTWISE) \
        and not op.regions
_staged = Switch(False)


def staged_epilogue() -> AbstractContextManager[None]:
    """Tests and benchmarks: every resident loop leaves through the staged epilogue."""
    return _staged.set(True)


@dataclass(frozen=True)
class DirectStore:
    store: Op
    result: Value  # the loop result: the accumulators, read from their fragments
    chain: tuple[Op, ...]  # the ops computing the store's operands from it, operands first
    deferred: tuple[Op, ...]  # ... of them, those on the result's path (emitted only here)
    targets: dict[Value, str]  # chain value -> its encoding in the re-emission
    tm: int
    tn: int
    slots: int


def _slice(parent: str, dim: int) -> str:
    return f"#ttg.slice<{{dim = {dim}, parent = {parent}}}>"


def _chain(em: Emitter, roots: tuple[Value, ...], enc: str, leaf: Value
           ) -> tuple[tuple[Op, ...], dict[Value, str]] | None:
    """The ops computing `roots` (tensors laid out in `enc` in the re-emission) from `leaf`,
    scalars and re-computable tensors, operands first, and every tensor's encoding there;
    None when one is not re-computable."""
    targets: dict[Value, str] = {}
    order: list[Op] = []
    seen: set[int] = set()

    def visit(v: Value, target: str) -> bool:
        if not isinstance(v.type, TensorType):
            return True  # a scalar: its name is in scope at the store
        if targets.setdefault(v, target) != target:
            return False  # needed in two layouts
        if v.id == leaf.id:
            return True
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
        elif name in _SHAPE or name in _ROOTS or name == "tt.load" or _elementwise(op):
            ok = all(visit(o, target) for o in op.operands)
        else:
            return False
        order.append(op)
        return ok

    if not all(visit(v, enc) for v in roots):
        return None
    return tuple(order), targets


def _path(em: Emitter, result: Value) -> tuple[list[Op], Op] | None:
    """The ops on the way from `result` to the one tt.store its values reach (as the stored
    value): element-wise ops and layout conversions, every use of every value on the way
    among them; None otherwise."""
    ops: list[Op] = []
    stores: list[Op] = []
    todo, done = [result], {result.id}
    while todo:
        v = todo.pop()
        for op, index in em.users.get(v.id, []):
            if op.name == "tt.store" and index == 1:
                stores.append(op)
                continue
            if not (op.name == "ttg.convert_layout" or _elementwise(op)) \
                    or len(op.results) != 1:
                return None
            if all(o is not op for o in ops):
                ops.append(op)
            out = op.results[0]
            if out.id not in done:
                done.add(out.id)
                todo.append(out)
    if len(stores) != 1:
        return None
    return ops, stores[0]


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
    if batch != 1 or _staged:
        return None
    ll = unit_layout(p.tm, p.tn, p.units_n, p.units, p.num_warps)
    if ll is None or not isinstance(result.type, TensorType) or result.type.shape != ll.shape:
        return None
    found = _path(em, result)
    if found is None:
        return None
    path, store = found
    if len(store.operands) not in (2, 3) or store.attrs.get("isVolatile") \
            or store.attrs.get("boundaryCheck") \
            or not all(isinstance(v.type, TensorType) for v in store.operands):
        return None  # (a scalar mask: the staged epilogue)
    block = _block_of(em, loop)
    if block is None or not all(any(op is o for o in block.ops) for op in [store, *path]):
        return None  # the matrices are declared in the loop's block: all must be there
    enc = linear_encoding(ll)
    chain = _chain(em, store.operands, enc, result)
    if chain is None:
        return None
    ops, targets = chain
    on_path = {id(op) for op in path}
    if not on_path <= {id(op) for op in ops}:
        return None  # a value on the path feeds something that does not reach the store
    deferred = tuple(op for op in ops if id(op) in on_path)
    return DirectStore(store, result, ops, deferred, targets, p.tm, p.tn, p.slots)


def defer(em: Emitter, d: DirectStore, mats: str) -> None:
    """After the loop: the ops on the result's path emit nothing where they stand; the store
    emits them, in the accumulators' layout."""
    em.deferred_ops.update(id(op) for op in d.deferred)
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
    em.deferred_ops.difference_update(id(op) for op in d.deferred)
    value = d.store.operands[1]
    with em.relaid(layouts):
        name = em.declare(d.result, "acc_frag")
        render(em, "fragments_out", name=name, mats=mats, slots=d.slots, tm=d.tm, tn=d.tn)
        for op in d.chain:
            if op.name == "ttg.convert_layout":  # the same layout on both sides now
                em.bind(op.results[0], em.name(op.operands[0]))
            else:
                em.emit_op(op)
        outer, em.op = em.op, d.store
        try:
            if len(d.store.operands) == 2:
                store(em, d.store)
            else:
                full = em.fresh("tile_in_bounds")
                mask = em.name(d.store.operands[2])
                render(em, "all_true", name=full, mask=mask, reg=REG,
                       regs=em.layout(value).regs)
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
