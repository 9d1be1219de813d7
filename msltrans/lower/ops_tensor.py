"""Shape ops: make_range, splat, broadcast, expand_dims, reshape, trans, join, split, cat.

All but make_range/splat move data between register arrays of one thread when the layouts
allow (`layout.gather_registers`); otherwise reshape goes through threadgroup scratch and
the rest refuse (Triton's passes pick layouts that keep them in registers).
"""

from __future__ import annotations

import math
from typing import NoReturn

from msltrans.ir.model import Op, Value
from msltrans.ir.types import TensorType
from msltrans.layout import gather_registers
from msltrans.lower.emitter import LANE, REG, WARP, Emitter
from msltrans.lower.registry import lowers


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
    from msltrans.lower.ops_convert import convert_through_scratch

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
    # tt.cat may reorder elements (tl.cat(can_reorder=True)); like Triton's NVIDIA lowering,
    # the result's registers are the lhs registers followed by the rhs registers.
    lhs, rhs = op.operands
    out = op.results[0]
    n_l, n_r = em.regs(lhs), em.regs(rhs)
    if em.regs(out) != n_l + n_r or em.layout(lhs).ll != em.layout(rhs).ll:
        em.fail("tt.cat whose result layout is not the two operands' registers side by side")
    em.copy_registers(out, [(em.name(lhs), i) for i in range(n_l)] +
                      [(em.name(rhs), i) for i in range(n_r)])


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
