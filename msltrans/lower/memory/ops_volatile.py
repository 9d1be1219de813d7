"""`tl.load(..., volatile=True)`: a load that reads memory every time it runs.

On NVIDIA, Triton emits `ld.volatile.global`: it must go to memory (not reuse a register or
a stale L1 line), and programs rely on it in spin loops (`while tl.load(flag, volatile=True)
== 0`) and in locks (take the lock with an `atomic_cas`, read the guarded data volatile,
release with `atomic_xchg`).

Metal's load that goes to memory is a relaxed atomic load (MSL §6.15.4.2), which device
memory serves coherently and the compiler may neither cache nor hoist out of a loop:
- 32-bit elements: `atomic_load_explicit` on the element as `device atomic_uint*`, reinterpreted;
- 16- and 8-bit elements: a relaxed atomic load of the aligned 32-bit word that contains the
  element, shifted (Apple GPUs are little-endian), as `tl.atomic_poll` does for 16-bit data;
- 64-bit elements refuse: Metal has no 64-bit atomic load (`atomic_ulong` has min/max only).

A relaxed load orders nothing (§6.15.1), and a CUDA program that reads a flag and then data
with volatile loads counts on them staying in that order. So every volatile load is followed
by the acquire fence docs/atomics.md uses for `sem="acquire"`:
`atomic_thread_fence(mem_device, seq_cst, thread_scope_device)` — later loads cannot move
before it. That needs MSL 3.2 (§6.15.3); below it the load refuses. Metal's device scope
stands in for PTX's system scope, which only matters for memory the CPU writes while the
kernel runs.

A volatile value must be the same in every thread that holds it, or a spin loop on it could
exit in some threads and not in others. So a scalar volatile load is made by thread 0 and
broadcast through threadgroup scratch (the barrier after it is a device+threadgroup one, so
the whole program's later reads follow thread 0's acquire, as for scalar atomics), and a tensor
element held by several threads (a replicated layout) is loaded by its owner and broadcast.
"""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.ir.types import PointerType, ScalarType
from msltrans.lower import msl_types
from msltrans.lower.emitter import LANE, REG, TID, WARP, Emitter
from msltrans.lower.values import zero_literal

_BITS = {"int": "uint", "float": "uint", "short": "ushort", "half": "ushort",
         "bfloat": "ushort", "char": "uchar", "uchar": "uchar", "bool": "uchar"}
_BARRIER = "threadgroup_barrier(mem_flags::mem_threadgroup);"
_DEVICE_BARRIER = "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);"
ACQUIRE = "atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);"


def _load_expr(em: Emitter, ptr: str, ct: str) -> str:
    """A relaxed atomic load of `*ptr` (element type `ct`) as a `ct` value."""
    bits = _BITS.get(ct)
    if bits == "uint":
        raw = f"atomic_load_explicit((device atomic_uint*)({ptr}), memory_order_relaxed)"
    elif bits == "ushort":
        em.include("atomic_load16")  # relaxed load of the containing 32-bit word
        raw = f"msl_atomic_load16((device short*)({ptr}))"
    elif bits == "uchar":
        em.include("atomic_load8")
        raw = f"msl_atomic_load8((device char*)({ptr}))"
        if ct == "bool":
            return f"({raw} != 0)"
    else:
        em.fail(f"volatile load of {ct} elements: Metal has no 64-bit atomic load "
                "(atomic_ulong offers only min/max)", "load 32-bit data volatile")
    return raw if ct in ("uint", "ushort", "uchar") else f"as_type<{ct}>({raw})"


def volatile_load(em: Emitter, op: Op) -> None:
    ptr = op.operands[0]
    mask = op.operands[1] if len(op.operands) > 1 else None
    other = op.operands[2] if len(op.operands) > 2 else None
    out = op.results[0]
    pt = msl_types.element(ptr.type)
    if not isinstance(pt, PointerType) or not isinstance(pt.pointee, ScalarType):
        em.fail("volatile load through a block pointer or a non-pointer operand",
                "use a tensor of pointers")
    ct = em.ctype(out)
    em.require_msl("atomic_thread_fence", "a volatile load (the acquire fence after it)")
    if not em.is_tensor(out):
        _scalar(em, op, ct)
        return
    name = em.declare(out)
    L = em.layout(ptr)
    fallback = em.at(other) if other is not None else zero_literal(ct)
    value = _load_expr(em, em.address(ptr), ct)
    if mask is not None:
        value = f"{em.at(mask)} ? {value} : {fallback}"
    replicated = any(L.ll.free_masks())
    owner = f"{L.owns_fn}({REG}, {LANE}, {WARP})"
    em.line(f"for (uint {REG} = 0; {REG} < {L.regs}u; ++{REG}) {{")
    em.line(f"    {name}[{REG}] = {value};" if not replicated
            else f"    if ({owner}) {name}[{REG}] = {value};")
    em.line("}")
    em.line(f"{ACQUIRE}  // later loads stay after the volatile ones")
    if replicated:
        numel = 1
        for d in L.ll.shape:
            numel *= d
        _publish(em, name, ct, numel, L, owner)


def _publish(em: Emitter, name: str, ct: str, numel: int, L, owner: str) -> None:  # noqa: ANN001
    """Owners write their elements to scratch; every thread reads its copies back."""
    scratch = em.need_scratch(numel * msl_types_size(ct))
    flat = f"{L.flat_fn}({REG}, {LANE}, {WARP})"
    em.line(f"{_BARRIER}  // earlier scratch users are done")
    em.line("{")
    em.line(f"    threadgroup {ct}* buf = (threadgroup {ct}*){scratch};")
    em.line(f"    for (uint {REG} = 0; {REG} < {L.regs}u; ++{REG})")
    em.line(f"        if ({owner}) buf[{flat}] = {name}[{REG}];")
    em.line(f"    {_BARRIER}  // every owner's value is in scratch")
    em.line(f"    for (uint {REG} = 0; {REG} < {L.regs}u; ++{REG}) {name}[{REG}] = buf[{flat}];")
    em.line("}")


def _scalar(em: Emitter, op: Op, ct: str) -> None:
    ptr = op.operands[0]
    mask = op.operands[1] if len(op.operands) > 1 else None
    other = op.operands[2] if len(op.operands) > 2 else None
    out = op.results[0]
    name = em.fresh(out.name)
    em.bind(out, name)
    value = _load_expr(em, em.address(ptr), ct)
    if mask is not None:
        fallback = em.at(other) if other is not None else zero_literal(ct)
        value = f"{em.at(mask)} ? {value} : {fallback}"
    scratch = em.need_scratch(8)
    em.line(f"{_BARRIER}  // volatile scalar: thread 0 loads, every thread gets its value")
    em.line(f"if ({TID} == 0u) {{")
    em.line(f"    *(threadgroup {ct}*){scratch} = {value};")
    em.line(f"    {ACQUIRE}")
    em.line("}")
    em.line(f"{_DEVICE_BARRIER}  // the program's later reads follow thread 0's acquire")
    em.line(f"{ct} {name} = *(threadgroup {ct}*){scratch};")


def msl_types_size(ct: str) -> int:
    return {"int": 4, "uint": 4, "float": 4, "short": 2, "ushort": 2, "half": 2, "bfloat": 2,
            "char": 1, "uchar": 1, "bool": 1}[ct]
