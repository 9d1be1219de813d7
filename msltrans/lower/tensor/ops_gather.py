"""tt.gather (tl.gather): out[c] = src[c with c[axis] replaced by indices[c]].

Through threadgroup scratch: the owners of `src` write it row-major, barrier, then every
thread reads the element each of its result registers names. An index outside
[0, src.shape[axis]) is undefined behaviour in Triton; here it reads a defined 0 instead of
memory past the tensor. `src` must fit in the 32 KB scratch (no passes: any result may need
any source element); bigger sources are refused.
"""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.ir.types import TensorType
from msltrans.lower.emitter import LANE, REG, WARP, Emitter
from msltrans.lower.registry import lowers
from msltrans.lower.tensor.ops_convert import ELEMENT_BYTES
from msltrans.lower.values import zero_literal


@lowers("tt.gather")
def gather(em: Emitter, op: Op) -> None:
    src, idx = op.operands[0], op.operands[1]
    out = op.results[0]
    axis = int(op.attrs["axis"])
    if not all(isinstance(v.type, TensorType) for v in (src, idx, out)):
        em.fail("tt.gather on scalars")
    s_shape, o_shape = src.type.shape, out.type.shape  # type: ignore[union-attr]
    if len(s_shape) != len(o_shape) or idx.type.shape != o_shape:  # type: ignore[union-attr]
        em.fail(f"tt.gather of {s_shape} by indices {idx.type.shape} into {o_shape}")  # type: ignore[union-attr]
    if any(o > s for d, (o, s) in enumerate(zip(o_shape, s_shape, strict=True)) if d != axis):
        em.fail(f"tt.gather indices {o_shape} larger than the source {s_shape} off the axis")
    if em.layout(idx).ll != em.layout(out).ll:
        em.fail("tt.gather whose indices and result layouts differ")
    c = em.ctype(src)
    ic = em.ctype(idx)
    if ic not in ("char", "short", "int", "long"):
        em.fail(f"tt.gather indices of type {ic}")
    stype, wcast, rcast = ("ulong", "(ulong)", f"({c})") if c.endswith("*") else (c, "", "")
    numel = src.type.numel  # type: ignore[union-attr]
    scratch = em.need_scratch(numel * ELEMENT_BYTES[stype])
    L_src, L_out = em.layout(src), em.layout(out)
    strides, acc = [], 1
    for n in reversed(s_shape):
        strides.append(acc)
        acc *= n
    strides.reverse()
    k = "msl_k"
    terms = [f"long({L_out.coord_fn(d)}({REG}, {LANE}, {WARP})) * {strides[d]}"
             if d != axis else f"{k} * {strides[d]}" for d in range(len(s_shape))]
    name = em.declare(out)
    em.line("{")
    em.indent(1)
    em.line(f"threadgroup {stype}* buf = (threadgroup {stype}*){scratch};")
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // earlier scratch users done")
    em.line(f"msl_unroll for (uint r = 0; r < {L_src.regs}u; ++r) {{")
    em.line(f"    if ({L_src.owns_fn}(r, {LANE}, {WARP})) "
            f"buf[{L_src.flat_fn}(r, {LANE}, {WARP})] = {wcast}{em.name(src)}[r];")
    em.line("}")
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);")
    em.line(f"msl_unroll for (uint {REG} = 0; {REG} < {L_out.regs}u; ++{REG}) {{")
    em.line(f"    long {k} = long({em.at(idx)});")
    em.line(f"    {name}[{REG}] = ({k} >= 0L && {k} < {s_shape[axis]}L) ? "
            f"{rcast}buf[{' + '.join(terms)}] : {zero_literal(c)};  // out of range: UB -> 0")
    em.line("}")
    em.indent(-1)
    em.line("}")
