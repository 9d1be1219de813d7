"""Integer arguments whose alignment would widen an access: the launch-time variant's key.

Triton's launcher specialises an integer argument only on divisibility by 16, so a row
stride of 1000 (fp32 rows 4,000 bytes apart: every row 16-byte aligned) reaches the compiler
as "divisible by 1", Triton's coalescing gives the row one element per thread and register,
and every access is scalar. Where an access came out narrower than 16 bytes, this module
names the integer arguments its address is computed from and the divisibility that would
make it 16 bytes wide (16 / element size). The launcher then compiles, on the first launch
whose values have that divisibility, a second variant of the kernel with the fact stated
(`tt.divisibility`, exactly as Triton states its own 16), and dispatches each launch to the
variant its values allow (msltrans/runtime/align_variants.py). The set is a heuristic in
one direction only: an argument left out costs speed, never correctness, since a variant is
only chosen for a launch whose values have every divisibility it was compiled with.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from msltrans.ir.model import Function, Op, Value
from msltrans.ir.types import ScalarType
from msltrans.lower.emitter import Emitter

MAX_ACCESS_BYTES = 16
# Ops whose result does not tell the address arithmetic anything about their operands'
# divisibility in a way worth a variant: a loaded index is data, not an argument's multiple.
_STOP = frozenset({"tt.load", "tt.atomic_rmw", "tt.atomic_cas"})


@dataclass
class NarrowAccesses:
    """The function's accesses narrower than 16 bytes (em.family state): (pointer, the
    divisibility in elements that would make them 16 bytes wide)."""

    accesses: list[tuple[Value, int]] = field(default_factory=list)


def note_narrow_access(em: Emitter, ptr: Value, nbytes_per_access: int, elem_bytes: int) -> None:
    """Record a tensor access that moves fewer than 16 bytes a run (ops_memory.py)."""
    if elem_bytes and nbytes_per_access < MAX_ACCESS_BYTES:
        em.family(NarrowAccesses).accesses.append((ptr, MAX_ACCESS_BYTES // elem_bytes))


def _carried(fn: Function) -> dict[int, list[Value]]:
    """Block argument of an scf.for body -> the values that flow into it (init, yield; for
    the induction variable: lower bound and step)."""
    out: dict[int, list[Value]] = {}

    def walk(ops: tuple[Op, ...]) -> None:
        for op in ops:
            for region in op.regions:
                for block in region.blocks:
                    walk(block.ops)
            if op.name != "scf.for" or not op.regions:
                continue
            body = op.regions[0].blocks[0]
            lb, _, step, *inits = op.operands
            yields = body.ops[-1].operands if body.ops and body.ops[-1].name == "scf.yield" \
                else ()
            out[body.args[0].id] = [lb, step]
            for i, arg in enumerate(body.args[1:]):
                out[arg.id] = [v for v in (inits[i] if i < len(inits) else None,
                                           yields[i] if i < len(yields) else None)
                               if v is not None]

    for block in fn.body.blocks:
        walk(block.ops)
    return out


def alignment_keys(em: Emitter, fn: Function) -> tuple[tuple[str, int], ...]:
    """(argument name, divisibility) for every integer argument in the address of a narrow
    access whose launch-time divisibility is not already that (sorted by name)."""
    narrow = em.family(NarrowAccesses).accesses
    if not narrow:
        return ()
    ints = {a.value.id: a for a in fn.args
            if isinstance(a.value.type, ScalarType) and a.value.type.is_int
            and a.value.type.bits > 1}
    if not ints:
        return ()
    carried = _carried(fn)
    need: dict[str, int] = {}
    for ptr, divisor in narrow:
        stack, seen = [ptr], set()
        while stack:
            v = stack.pop()
            if v.id in seen:
                continue
            seen.add(v.id)
            arg = ints.get(v.id)
            if arg is not None:
                if (arg.divisibility or 1) < divisor:
                    need[arg.name] = max(need.get(arg.name, 1), divisor)
                continue
            producer = em.producers.get(v.id)
            if producer is None:
                stack.extend(carried.get(v.id, ()))
            elif producer.name not in _STOP:
                stack.extend(producer.operands)
    return tuple(sorted(need.items()))
