"""Pointers and global memory: tt.addptr, tt.int_to_ptr/ptr_to_int, tt.load, tt.store.

Loads run in every replica (reads are idempotent); masked-off lanes never touch memory.
Stores are done once per element: only the owning (register, lane, warp) writes.
A scalar store (thread 0 alone) is fenced by barriers when another access of the program may
touch its buffer (pointer_roots.py).
"""

from __future__ import annotations

from msltrans.ir.model import Op, Value
from msltrans.ir.types import PointerType, ScalarType
from msltrans.lower import msl_types
from msltrans.lower.dot import direct_store
from msltrans.lower.emitter import LANE, REG, TID, WARP, Emitter
from msltrans.lower.layout_table import LayoutRef
from msltrans.lower.memory import align_keys, ops_volatile, run_bounds, vector_access
from msltrans.lower.memory.pointer_roots import shares_buffer_with_other_access
from msltrans.lower.registry import lowers
from msltrans.lower.values import zero_literal

DEVICE_FENCE = "mem_flags::mem_device"


@lowers("tt.addptr")
def addptr(em: Emitter, op: Op) -> None:
    # Offsets count elements of the pointee, as C pointer arithmetic does. A pointer held
    # as a 32-bit element offset adds modulo 2^32 (exact where it is dereferenced:
    # pointer_offsets.py).
    if op.results[0].id in em.offset_base:
        em.elementwise(op, lambda p, off: f"int(uint({p}) + uint({off}))")
        return
    em.elementwise(op, lambda p, off: f"{p} + {off}")


@lowers("tt.int_to_ptr")
def int_to_ptr(em: Emitter, op: Op) -> None:
    # A 64-bit integer holding a device address (Metal 3 GPU addresses are 64-bit).
    c = em.ctype(op.results[0])
    em.elementwise(op, lambda x: f"reinterpret_cast<{c}>(ulong({x}))")


@lowers("tt.ptr_to_int")
def ptr_to_int(em: Emitter, op: Op) -> None:
    c = em.ctype(op.results[0])
    em.elementwise(op, lambda p: f"{c}(reinterpret_cast<ulong>({p}))")


def _check_memory_attrs(em: Emitter, op: Op) -> None:
    if op.attrs.get("isVolatile"):
        em.fail("volatile loads are not modelled", "drop volatile=True")
    if isinstance(msl_types.element(op.operands[0].type), PointerType):
        ptr = msl_types.element(op.operands[0].type)
        if isinstance(ptr, PointerType) and not isinstance(ptr.pointee, ScalarType):
            em.fail("block pointers (tt.make_tensor_ptr) are not supported",
                    "use tensors of pointers")
    else:
        em.fail("load/store through a non-pointer operand")


@lowers("tt.load")
def load(em: Emitter, op: Op) -> None:
    if op.attrs.get("isVolatile"):
        return ops_volatile.volatile_load(em, op)  # relaxed atomic loads (ops_volatile.py)
    _check_memory_attrs(em, op)
    ptr = op.operands[0]
    mask = op.operands[1] if len(op.operands) > 1 else None
    other = op.operands[2] if len(op.operands) > 2 else None
    out = op.results[0]
    if not em.is_tensor(out):
        name = em.fresh(out.name)
        em.bind(out, name)
        if mask is None:
            em.line(f"{em.ctype(out)} {name} = *{em.address(ptr)};")
        else:
            fallback = em.at(other) if other is not None else zero_literal(em.ctype(out))
            em.line(f"{em.ctype(out)} {name} = {em.at(mask)} ? *{em.address(ptr)} : {fallback};")
        return
    name = em.declare(out)
    p = vector_access.plan(em, ptr, mask)
    _access_stats(em, "load", ptr, p)
    if p is not None:
        _vector_load(em, p, name, ptr, mask, other)
        return
    if mask is None:
        em.render("element_loop", reg=REG, regs=em.regs(out),
                  body=f"{name}[{REG}] = *{em.address(ptr)};")
        return
    # Masked-off elements without `other` are undefined in Triton; we give zero.
    fallback = em.at(other) if other is not None else zero_literal(em.ctype(out))
    em.render("masked_load", out=f"{name}[{REG}]", reg=REG, regs=em.regs(out),
              ptr=em.address(ptr), mask=em.at(mask), other=fallback)


@lowers("tt.store")
def store(em: Emitter, op: Op) -> None:
    _check_memory_attrs(em, op)
    if direct_store.take(em, op):  # a resident dot's result, stored from its fragments
        return
    ptr, value = op.operands[0], op.operands[1]
    mask = op.operands[2] if len(op.operands) > 2 else None
    if not em.is_tensor(ptr):
        # A scalar store is the same in every thread: thread 0 does it once. The program is
        # sequential, so the other threads' accesses of that buffer before the store (and
        # after it) must not overtake it: fence it with barriers on both sides. Scalar
        # control flow is uniform, so every thread reaches them.
        fenced = shares_buffer_with_other_access(em, op)
        if fenced:
            em.line(f"threadgroup_barrier({DEVICE_FENCE});  // earlier accesses by other threads")
        guard = f"{TID} == 0u" + (f" && {em.at(mask)}" if mask is not None else "")
        em.line(f"if ({guard}) *{em.address(ptr)} = {em.at(value)};")
        if fenced:
            em.line(f"threadgroup_barrier({DEVICE_FENCE});  // later accesses see the store")
        return
    L = em.layout(ptr)
    guard = f"{L.owns_fn}({REG}, {LANE}, {WARP})" if not L.owns_all else ""
    if mask is not None:
        guard += (" && " if guard else "") + em.at(mask)
    p = vector_access.plan(em, ptr, mask)
    _access_stats(em, "store", ptr, p)
    if p is not None and p.bound and mask is not None:
        _ragged_store(em, p, ptr, value, mask, L)
        return
    if p is not None:
        em.render("vector_store", reg=REG, regs=p.regs, width=p.width, nbytes=p.nbytes,
                  word=p.word, space=em.pointer_space(ptr), ptr=em.address(ptr), guard=guard,
                  checks=_checks(em, p, ptr, mask),
                  packed=vector_access.pack(p, em.name(value), REG))
        return
    if not guard:
        em.render("element_loop", reg=REG, regs=L.regs,
                  body=f"*{em.address(ptr)} = {em.at(value)};")
        return
    em.render("store", reg=REG, regs=L.regs, ptr=em.address(ptr), value=em.at(value), guard=guard)


def _access_stats(em: Emitter, kind: str, ptr: Value, p: vector_access.VectorPlan | None
                  ) -> None:
    """`// msltrans-mem:` line: what one thread issues for this access (benchmarks read it)."""
    regs = em.regs(ptr)
    width = p.width if p is not None else 1
    elem_bytes = vector_access.ELEMENT_BYTES.get(vector_access.pointee(em, ptr), 0)
    nbytes = p.nbytes if p is not None else elem_bytes
    align_keys.note_narrow_access(em, ptr, nbytes, elem_bytes)
    bound = f" bound={p.bound}" if p is not None and p.bound else ""
    em.line(f"// msltrans-mem: {kind} elements={regs} width={width} bytes={nbytes} "
            f"accesses={regs // width}{bound}")


def _checks(em: Emitter, p: vector_access.VectorPlan, ptr: Value, mask: Value | None
            ) -> list[str]:
    """The simulator's run-time checks of a run's facts (no-ops on Metal). For a bound
    mask the uniformity check belongs inside the whole-run branch (_uniform)."""
    vector_access.require_alignment(em, ptr, p.nbytes)
    base = em.offset_base.get(ptr.id)
    lines = [f"msl_assume_run_at({base}, {em.name(ptr)}, {REG}, {p.width}u, {p.nbytes}u);"
             if base else f"msl_assume_run({em.name(ptr)}, {REG}, {p.width}u, {p.nbytes}u);"]
    if mask is not None and em.is_tensor(mask) and not p.bound:
        lines.append(_uniform(em, p, mask))
    return lines


def _uniform(em: Emitter, p: vector_access.VectorPlan, mask: Value) -> str:
    return f"msl_assume_uniform({em.name(mask)}, {REG}, {p.width}u);"


def _whole(em: Emitter, p: vector_access.VectorPlan, mask: Value) -> str:
    return run_bounds.whole_run_test(em, mask, p.bound, REG, p.width)


def _ragged_store(em: Emitter, p: vector_access.VectorPlan, ptr: Value, value: Value,
                  mask: Value, L: LayoutRef) -> None:
    """A store under a bound mask: whole runs as one access, a cut run element by element."""
    owner = f"{L.owns_fn}({REG}, {LANE}, {WARP})" if not L.owns_all else ""
    tail = []
    for i in range(p.width):
        reg = f"{REG} + {i}u"
        tail.append(f"if ({em.at(mask, reg)}) *{em.address(ptr, reg)} = {em.at(value, reg)};")
    em.render("ragged_store", reg=REG, regs=p.regs, width=p.width, nbytes=p.nbytes,
              word=p.word, space=em.pointer_space(ptr), ptr=em.address(ptr), owner=owner,
              whole=_whole(em, p, mask), checks=_checks(em, p, ptr, mask),
              uniform=_uniform(em, p, mask), packed=vector_access.pack(p, em.name(value), REG),
              tail=tail)


def _constant_other(em: Emitter, p: vector_access.VectorPlan, other: Value | None
                    ) -> int | None:
    """The bits of `other` when it is one constant for every element (zero when absent)."""
    if other is None:
        return 0
    producer = em.producers.get(other.id)
    if producer is not None and producer.name == "tt.splat":
        producer = em.producers.get(producer.operands[0].id)
    if producer is None or producer.name != "arith.constant":
        return None
    if em.is_tensor(producer.results[0]) and not producer.attrs.get("splat"):
        return None
    return vector_access.element_bits(p.elem, producer.attrs.get("value"))


def _vector_load(em: Emitter, p: vector_access.VectorPlan, name: str, ptr: Value,
                 mask: Value | None, other: Value | None) -> None:
    if p.bound and mask is not None:
        tail = []
        for i in range(p.width):
            reg = f"{REG} + {i}u"
            fill = em.at(other, reg) if other is not None else zero_literal(p.elem)
            tail.append(f"{name}[{reg}] = {em.at(mask, reg)} ? *{em.address(ptr, reg)} : "
                        f"{fill};")
        em.render("ragged_load", reg=REG, regs=p.regs, width=p.width, nbytes=p.nbytes,
                  word=p.word, space=em.pointer_space(ptr), ptr=em.address(ptr),
                  whole=_whole(em, p, mask), checks=_checks(em, p, ptr, mask),
                  uniform=_uniform(em, p, mask), unpack=vector_access.unpack(p, name, REG),
                  tail=tail)
        return
    fallback, filler = [], ""
    if mask is not None:
        bits = _constant_other(em, p, other)
        if bits is not None:  # the masked-off run reads as a word of `other`'s bits
            filler = vector_access.fill_word(p, bits)
        for i in range(p.width):
            reg = f"{REG} + {i}u"
            fill = em.at(other, reg) if other is not None else zero_literal(p.elem)
            fallback.append(f"{name}[{reg}] = {fill};")
    em.render("vector_load", reg=REG, regs=p.regs, width=p.width, nbytes=p.nbytes,
              word=p.word, space=em.pointer_space(ptr), ptr=em.address(ptr),
              mask=em.at(mask) if mask is not None else "",
              checks=_checks(em, p, ptr, mask), unpack=vector_access.unpack(p, name, REG),
              fallback=fallback, filler=filler)
