"""Which buffers a kernel must declare `coherent(device)`: data one program publishes and
another reads in the same launch.

Metal keeps device memory coherent only within a threadgroup unless a buffer is declared
`coherent(device)` (MSL specification, section 4.8; Metal 3.2): a plain load may be served
from a cache that never saw another threadgroup's store, and fences do not change that. A
Triton program is a threadgroup, so every "one program writes, another reads after
synchronising" pattern (tutorial 05's spin-locked partial sums, a flag published with
`sem="release"` and read with `sem="acquire"`, a volatile spin loop) needs the qualifier on
the buffers that carry the data.

A kernel can only order its memory against other programs through an acquiring operation:
an atomic with `sem="acquire"` or `"acq_rel"` (Triton's default) at `scope="gpu"`/`"sys"`,
or a volatile load (msltrans follows each with an acquire fence, ops_volatile.py). A buffer
needs the qualifier when both hold:

- the kernel reads it with a plain load that may run after an acquiring operation (later in
  program order, or in a loop that also holds one: its next iteration comes after it);
- the kernel writes it (plain store or atomic), so another program may have written what
  is read; distinct pointer arguments are taken not to overlap, and the launcher refuses a
  launch where a coherent buffer overlaps another argument (runtime/launch.py).

A pointer whose buffer is unknown (loop-carried, computed) counts as any argument. Loads
that all come before the first acquire (split-K's operand loads before its `atomic_add`) keep
their buffers cached. Device pointers that may point into a coherent buffer are declared with
the qualifier too (`Emitter.pointer_space`): Metal converts a pointer to one with more
qualifiers implicitly, never back, and a load through an unqualified copy would not be
coherent. `noinline` helpers that touch memory in such a kernel are refused (their
parameters would need the qualifier; not validated).
"""

from __future__ import annotations

from dataclasses import dataclass

from msltrans.ir.model import Block, Function, Module, Op, Value
from msltrans.ir.types import PointerType, TensorType
from msltrans.lower.emitter import Emitter
from msltrans.lower.memory.pointer_roots import Roots, roots

_ACQUIRE_SEMS = ("acquire", "acq_rel")
_WRITES = ("tt.store", "tt.atomic_rmw", "tt.atomic_cas")
_LOOPS = ("scf.for", "scf.while")


@dataclass(frozen=True)
class _Site:
    op: Op
    order: int
    loops: tuple[int, ...]   # ids of the enclosing loop ops


def _keywords(op: Op, count: int) -> list[str]:
    body = op.text.split(op.name, 1)[-1]
    return [w.strip() for w in body.split(",")][:count]


def _acquires(op: Op) -> bool:
    if op.name == "tt.load":
        return bool(op.attrs.get("isVolatile"))
    if op.name in ("tt.atomic_rmw", "tt.atomic_cas", "tt.atomic_poll"):
        words = _keywords(op, 3 if op.name == "tt.atomic_rmw" else 2)
        sem, scope = words[-2:] if len(words) >= 2 else ("acq_rel", "gpu")
        return sem in _ACQUIRE_SEMS and scope != "cta"
    return False


def _walk(block: Block, loops: tuple[int, ...], out: list[_Site]) -> None:
    for op in block.ops:
        out.append(_Site(op, len(out), loops))
        inner = (*loops, id(op)) if op.name in _LOOPS else loops
        for region in op.regions:
            for sub in region.blocks:
                _walk(sub, inner, out)


def _callee_touches_memory(module: Module, op: Op, seen: set[str]) -> bool:
    name = str(op.attrs.get("callee", "")).lstrip("@")
    fn = next((f for f in module.functions if f.name == name), None)
    if fn is None or name in seen:
        return fn is None
    seen.add(name)
    sites: list[_Site] = []
    for block in fn.body.blocks:
        _walk(block, (), sites)
    return any(s.op.name in _WRITES or s.op.name in ("tt.load", "tt.atomic_poll")
               or (s.op.name == "tt.call" and _callee_touches_memory(module, s.op, seen))
               for s in sites)


def plan(em: Emitter, fn: Function, module: Module) -> frozenset[int]:
    """The ids of the pointer arguments to declare `coherent(device)` (see the module doc)."""
    sites: list[_Site] = []
    for block in fn.body.blocks:
        _walk(block, (), sites)
    acquires = [s for s in sites if _acquires(s.op)]
    if not acquires:
        return frozenset()
    args = frozenset(a.value.id for a in fn.args if isinstance(a.value.type, PointerType))
    for site in sites:
        if site.op.name == "tt.call" and _callee_touches_memory(module, site.op, set()):
            em.op = site.op
            em.fail("a noinline helper that reads or writes memory, in a kernel whose "
                    "programs synchronise through acquire atomics or volatile loads",
                    "inline the helper (drop noinline=True): its pointers would need "
                    "coherent(device), which msltrans has not validated for helpers")

    def buffers(value: Value) -> frozenset[int]:
        found: Roots = roots(em, value, args)
        return args if found is None else found & args

    def after_acquire(site: _Site) -> bool:
        return any(a.order < site.order or set(a.loops) & set(site.loops) for a in acquires)

    written: set[int] = set()
    read_late: set[int] = set()
    for site in sites:
        op = site.op
        if op.name in _WRITES:
            written |= buffers(op.operands[0])
        elif op.name == "tt.load" and not op.attrs.get("isVolatile") and after_acquire(site):
            read_late |= buffers(op.operands[0])
    return frozenset(written & read_late)


def _pointer_values(block: Block, out: list[Value]) -> None:
    for arg in block.args:
        out.append(arg)
    for op in block.ops:
        out.extend(op.results)
        for region in op.regions:
            for sub in region.blocks:
                _pointer_values(sub, out)


def qualified_values(em: Emitter, fn: Function, coherent: frozenset[int]) -> frozenset[int]:
    """The ids of the pointer values (arguments, results, loop-carried values) that may point
    into a `coherent` buffer: their MSL types carry the qualifier."""
    if not coherent:
        return frozenset()
    args = frozenset(a.value.id for a in fn.args if isinstance(a.value.type, PointerType))
    values: list[Value] = [a.value for a in fn.args]
    for block in fn.body.blocks:
        _pointer_values(block, values)
    out = set()
    for value in values:
        t = value.type.element if isinstance(value.type, TensorType) else value.type
        if isinstance(t, PointerType):
            found = roots(em, value, args)
            if found is None or found & coherent:
                out.add(value.id)
    return frozenset(out)
