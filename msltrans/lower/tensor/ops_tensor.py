"""Shape ops: make_range, splat, broadcast, expand_dims, reshape, trans, join, split, cat.

All but make_range/splat move data between register arrays of one thread when the layouts
allow (`layout.gather_registers`); otherwise reshape and cat go through threadgroup scratch
and the rest refuse (Triton's passes pick layouts that keep them in registers).
"""

from __future__ import annotations

import math
from typing import NoReturn

from msltrans.abi.limits import THREADGROUP_MEMORY_BYTES
from msltrans.ir.model import Op, Value
from msltrans.ir.types import TensorType
from msltrans.layout import gather_registers
from msltrans.lower.emitter import LANE, REG, WARP, Emitter
from msltrans.lower.registry import lowers
from msltrans.lower.tensor.ops_convert import (
    ELEMENT_BYTES,
    SCRATCH_CHUNK_BYTES,
    convert_through_scratch,
)


def _shape(v: Value) -> tuple[int, ...]:
    assert isinstance(v.type, TensorType)
    return v.type.shape


@lowers("tt.make_range")
def make_range(em: Emitter, op: Op) -> None:
    out = op.results[0]
    start = int(op.attrs["start"])
    L = em.layout(out)
    em.elementwise(op, lambda: f"{start} + {L.coord_fn(0)}({REG}, {LANE}, {WARP})")


@lowers("tt.splat")
def splat(em: Emitter, op: Op) -> None:
    em.elementwise(op, lambda s: s)


def _move(em: Emitter, op: Op, sources: list[Value], to_src, offset=None,  # noqa: ANN001
          what: str = "") -> bool:
    out = op.results[0]
    plan = gather_registers(em.layout(out).ll, [em.layout(s).ll for s in sources], to_src,
                            offset)
    if plan is None:
        return False
    em.copy_registers(out, [(em.name(sources[k]), r) for k, r in plan])
    return True


def _refuse_cross_thread(em: Emitter, op: Op) -> NoReturn:
    em.fail("the result layout would move data between threads",
            "expected Triton to insert ttg.convert_layout here; report the kernel")


@lowers("tt.broadcast")
def broadcast(em: Emitter, op: Op) -> None:
    src = op.operands[0]
    if not em.is_tensor(src):
        em.elementwise(op, lambda s: s)
        return
    ones = [d for d, n in enumerate(_shape(src)) if n == 1]
    if not _move(em, op, [src], lambda c: (0, tuple(0 if d in ones else x
                                                    for d, x in enumerate(c)))):
        _refuse_cross_thread(em, op)


@lowers("tt.expand_dims")
def expand_dims(em: Emitter, op: Op) -> None:
    axis = int(op.attrs["axis"])
    if not _move(em, op, [op.operands[0]], lambda c: (0, c[:axis] + c[axis + 1:])):
        _refuse_cross_thread(em, op)


def _row_major(shape: tuple[int, ...], flat: int) -> tuple[int, ...]:
    out = []
    for n in reversed(shape):
        out.append(flat % n)
        flat //= n
    return tuple(reversed(out))


@lowers("tt.reshape")
def reshape(em: Emitter, op: Op) -> None:
    src, out = op.operands[0], op.results[0]
    L_out = em.layout(out)
    src_shape = _shape(src)
    if _move(em, op, [src], lambda c: (0, _row_major(src_shape, L_out.ll.flat(c)))):
        return
    # Row-major flat indices agree between a tensor and its reshape: go through scratch.
    convert_through_scratch(em, src, out)


@lowers("tt.trans")
def trans(em: Emitter, op: Op) -> None:
    order = tuple(op.attrs["order"])
    rank = len(order)

    def to_src(c: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
        s = [0] * rank
        for i, o in enumerate(order):  # result dim i is source dim order[i]
            s[o] = c[i]
        return 0, tuple(s)

    if not _move(em, op, [op.operands[0]], to_src):
        _refuse_cross_thread(em, op)


@lowers("tt.join")
def join(em: Emitter, op: Op) -> None:
    if not _move(em, op, list(op.operands), lambda c: (c[-1], c[:-1])):
        _refuse_cross_thread(em, op)


@lowers("tt.split")
def split(em: Emitter, op: Op) -> None:
    src = op.operands[0]
    L_src = em.layout(src)
    for k, out in enumerate(op.results):
        plan = gather_registers(em.layout(out).ll, [L_src.ll], lambda c: (0, c + (0,)),
                                (0,) * (len(_shape(out))) + (k,))
        if plan is None:
            _refuse_cross_thread(em, op)
        em.copy_registers(out, [(em.name(src), r) for _, r in plan])


@lowers("tt.cat")
def cat(em: Emitter, op: Op) -> None:
    # tt.cat (tl.cat(can_reorder=True)) may reorder elements; we never do: the result is the
    # concatenation along dim 0 in order (what torch.cat and upstream's test_cat expect, and
    # what Triton 3.10 makes the only behaviour). Registers when each thread holds its
    # elements of both halves already, else through threadgroup scratch.
    lhs, rhs = op.operands
    out = op.results[0]
    shape_l, shape_r, shape_o = _shape(lhs), _shape(rhs), _shape(out)
    if (shape_l != shape_r or shape_o[0] != 2 * shape_l[0] or shape_o[1:] != shape_l[1:]
            or em.ctype(lhs) != em.ctype(rhs)):
        em.fail(f"tt.cat of {shape_l} and {shape_r} into {shape_o}",
                "tt.cat joins two equal-shape tensors along dim 0")
    half = shape_l[0]
    if half & (half - 1) == 0:  # the operand is the top bit of the dim-0 index: XOR-linear

        def to_src(c: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
            return (1 if c[0] & half else 0), (c[0] & (half - 1),) + c[1:]

        if _move(em, op, [lhs, rhs], to_src):
            return
    _cat_through_scratch(em, lhs, rhs, out)


def _cat_through_scratch(em: Emitter, lhs: Value, rhs: Value, out: Value) -> None:
    """Owners write lhs at row-major flat f and rhs at numel + f; all read by result flat."""
    c = em.ctype(out)
    # Pointers travel as ulong; 16-bit floats as their bits, so every payload (signalling
    # NaNs included) comes out unchanged.
    stype, wcast, rcast = c, "", ""
    if c.endswith("*"):
        stype, wcast, rcast = "ulong", "(ulong)", f"({c})"
    elif c in ("half", "bfloat"):
        stype, wcast, rcast = "ushort", "as_type<ushort>", f"as_type<{c}>"
    numel = math.prod(_shape(lhs))
    total, size = 2 * numel, ELEMENT_BYTES["ulong" if c.endswith("*") else c]
    chunk = total if total * size <= THREADGROUP_MEMORY_BYTES else SCRATCH_CHUNK_BYTES // size
    scratch = em.need_scratch(chunk * size)
    L_l, L_r, L_o = em.layout(lhs), em.layout(rhs), em.layout(out)
    at = f"{REG}, {LANE}, {WARP}"
    name = em.declare(out)
    em.line("{")
    em.indent(1)
    em.line(f"threadgroup {stype}* buf = (threadgroup {stype}*){scratch};")
    em.line(f"for (int base = 0; base < {total}; base += {chunk}) {{  // tt.cat in order")
    em.indent(1)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // earlier scratch readers done")
    for src, L, first in ((lhs, L_l, 0), (rhs, L_r, numel)):
        em.line(f"msl_unroll for (uint {REG} = 0; {REG} < {L.regs}u; ++{REG}) {{")
        em.line(f"    int f = {first} + int({L.flat_fn}({at})) - base;")
        em.line(f"    if (f >= 0 && f < {chunk} && {L.owns_fn}({at})) "
                f"buf[f] = {wcast}({em.name(src)}[{REG}]);")
        em.line("}")
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);")
    em.line(f"msl_unroll for (uint {REG} = 0; {REG} < {L_o.regs}u; ++{REG}) {{")
    em.line(f"    int f = int({L_o.flat_fn}({at})) - base;")
    em.line(f"    if (f >= 0 && f < {chunk}) {name}[{REG}] = {rcast}(buf[f]);")
    em.line("}")
    em.indent(-1)
    em.line("}")
    em.indent(-1)
    em.line("}")


@lowers("tt.unsplat")
def unsplat(em: Emitter, op: Op) -> None:
    # A single-element tensor → its scalar. Every coordinate of a 1-element tensor is 0, so
    # every (register, lane, warp) holds a replica of it, and replicas agree (loads run in
    # every replica, atomics broadcast their old values): register 0 is the value in every
    # thread, owner or not.
    src, out = op.operands[0], op.results[0]
    if not em.is_tensor(src) or em.is_tensor(out):
        em.fail("tt.unsplat expects a tensor operand and a scalar result")
    ll = em.layout(src).ll
    if math.prod(_shape(src)) != 1 or any(any(b) for b in ll.reg + ll.lane + ll.warp):
        em.fail(f"tt.unsplat of a tensor of shape {_shape(src)} (needs exactly one element)")
    name = em.fresh(em.hint(out))
    em.bind(out, name)
    em.line(f"{em.ctype(out)} {name} = {em.at(src, 0)};  // every thread holds the element")
