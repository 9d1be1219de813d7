"""Which kernel arguments a pointer value may point into (a small may-alias analysis).

A Triton program is sequential, but its lowering spreads it over the threads of a
threadgroup: a scalar store is done by thread 0 alone while every thread performs the
scalar loads. When another memory access of the program may touch the same buffer, the
store must be ordered against the other threads' accesses with barriers (ops_memory.py).
This module answers "may these two pointers share a buffer?" by following each pointer
back through the ops that keep its buffer (addptr, splat, broadcast, layout changes, select)
to kernel arguments. Anything else — loop-carried pointers, int_to_ptr, callee arguments —
is unknown and aliases everything.
"""

from __future__ import annotations

from msltrans.ir.model import Op, Value
from msltrans.lower.emitter import Emitter

# Ops whose pointer result lies in the same buffer as pointer operand(s) at these positions.
_SAME_BUFFER: dict[str, tuple[int, ...]] = {
    "tt.addptr": (0,), "tt.splat": (0,), "tt.broadcast": (0,), "tt.expand_dims": (0,),
    "tt.reshape": (0,), "tt.trans": (0,), "ttg.convert_layout": (0,), "tt.unsplat": (0,),
    "tt.bitcast": (0,), "arith.select": (1, 2),
}
MEMORY_OPS = frozenset({
    "tt.load", "tt.store", "tt.atomic_rmw", "tt.atomic_cas", "tt.atomic_poll",
    "tt.descriptor_load", "tt.descriptor_store",
})
Roots = frozenset[int] | None  # None: unknown, may alias any buffer


def kernel_argument_ids(em: Emitter) -> frozenset[int]:
    module = em.module
    if module is None:
        return frozenset()
    return frozenset(a.value.id for a in module.function().args)


def roots(em: Emitter, v: Value, args: frozenset[int]) -> Roots:
    found: set[int] = set()
    stack, seen = [v], set()
    while stack:
        cur = stack.pop()
        if cur.id in seen:
            continue
        seen.add(cur.id)
        producer = em.producers.get(cur.id)
        if producer is None:
            if cur.id not in args:
                return None  # a block argument (loop-carried) or a callee's parameter
            found.add(cur.id)
            continue
        positions = _SAME_BUFFER.get(producer.name)
        if positions is None:
            return None
        stack.extend(producer.operands[i] for i in positions)
    return frozenset(found)


def memory_ops(em: Emitter) -> list[Op]:
    """Every load/store/atomic of the module (each once), from the emitter's use lists."""
    ops: dict[int, Op] = {}
    for users in em.users.values():
        for op, _ in users:
            if op.name in MEMORY_OPS:
                ops[id(op)] = op
    return list(ops.values())


def may_alias(a: Roots, b: Roots) -> bool:
    return a is None or b is None or bool(a & b)


def shares_buffer_with_other_access(em: Emitter, op: Op) -> bool:
    """True if a memory op other than `op` may access the buffer `op`'s pointer points into."""
    args = kernel_argument_ids(em)
    mine = roots(em, op.operands[0], args)
    return any(other is not op and may_alias(mine, roots(em, other.operands[0], args))
               for other in memory_ops(em))
