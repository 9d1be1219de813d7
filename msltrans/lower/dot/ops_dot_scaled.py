"""tt.dot_scaled: microscaled (MX) dot, decomposed as Triton's DecomposeScaledBlocked does.

Per operand: decode to the compute type (fp16 if either operand is fp16, else bf16):
e2m1 (two per byte, low nibble first, packed along K or, with k_pack=False, along M / N),
e4m3, e5m2 exactly, bf16 -> fp16 with RTNE; then, with a uint8 e8m0 scale per `SF` elements
of K (SF = K / scale columns, 32 for MX), multiply by 2^(s - 127) built like Triton
(fp32 bits s << 23, so s = 0 gives 0; for fp16 rounded to half) with the product rounded
once to the compute type, and NaN where s = 0xff (unless fastMath); or, with an fp8e4m3
scale (nvfp4, typically 16 elements per scale), times the scale's value (exact in the compute
type), NaN where the scale is NaN (unless fastMath). The rhs scale is given
[N, K / SF]. Then D = A' @ B' + C with fp32 products and one fp32 fma chain per element over
k = 0..K-1 in order (ops_dot's meaning).

MSL: the scales are staged once in threadgroup memory; A' and B' are staged in K chunks
that fit (32 KB in all), the accumulators stay in registers across chunks. Refused: rank-3
(batched) operands, outputs other than fp32, scale tensors of other shapes.
"""

from __future__ import annotations

import re

from msltrans.abi.limits import THREADGROUP_MEMORY_BYTES
from msltrans.ir.model import Op, Value
from msltrans.ir.types import ScalarType, TensorType
from msltrans.lower.dot.info import align16
from msltrans.lower.elementwise.ops_fp8 import need_fp8_support
from msltrans.lower.emitter import LANE, WARP, Emitter
from msltrans.lower.registry import lowers

_SYNTAX = re.compile(r"tt\.dot_scaled\s+%[\w.#]+(\s+scale\s+%[\w.#]+)?\s*,\s*%[\w.#]+"
                     r"(\s+scale\s+%[\w.#]+)?\s*,\s*%[\w.#]+\s+lhs\s*=\s*(\w+)\s+rhs\s*=\s*(\w+)")
_FORMATS = {"e2m1", "e4m3", "e5m2", "bf16", "fp16"}
_ELEMENT = {"e4m3": "f8E4M3FN", "e5m2": "f8E5M2", "bf16": "bf16", "fp16": "f16", "e2m1": "i8"}


def _render(em: Emitter, macro: str, **kw: object) -> None:
    """A dot_scaled.metal.j2 macro into the body."""
    em.render(f"dot_scaled.{macro}", **kw)


def _shape(v: Value) -> tuple[int, ...]:
    assert isinstance(v.type, TensorType)
    return v.type.shape


def _decode(fmt: str, x: str, nibble: int | None) -> str:
    """float expression of one element of raw register `x`."""
    if fmt == "e2m1":
        part = f"(uchar({x}) & 0xfu)" if nibble == 0 else f"(uchar({x}) >> 4)"
        return f"msl_e2m1_to_float(uchar{part})"
    if fmt in ("e4m3", "e5m2"):
        return f"msl_f8{fmt}_to_float({x})"
    return f"float({x})"


@lowers("tt.dot_scaled")
def dot_scaled(em: Emitter, op: Op) -> None:
    m = _SYNTAX.search(op.text)
    if m is None:
        em.fail("tt.dot_scaled: cannot read its operands from the IR text",
                "report the kernel (msltrans reads lhs/rhs formats and scales from it)")
    has_sa, has_sb, fa, fb = bool(m.group(1)), bool(m.group(2)), m.group(3), m.group(4)
    if fa not in _FORMATS or fb not in _FORMATS:
        em.fail(f"tt.dot_scaled formats {fa} x {fb}", f"formats: {sorted(_FORMATS)}")
    ops = list(op.operands)
    if len(ops) != 3 + has_sa + has_sb:
        em.fail(f"tt.dot_scaled with {len(ops)} operands")
    a, b, c = ops[:3]
    sa = ops[3] if has_sa else None
    sb = ops[3 + has_sa] if has_sb else None
    out = op.results[0]
    rank = len(_shape(a))
    if rank != 2:
        em.fail("tt.dot_scaled on batched (rank-3) operands is not supported",
                "loop over the batch in the kernel")
    for v, fmt in ((a, fa), (b, fb)):
        el = v.type.element if isinstance(v.type, TensorType) else None
        if not isinstance(el, ScalarType) or el.name != _ELEMENT[fmt]:
            em.fail(f"tt.dot_scaled operand of type {el} for format {fmt}")
    for v in (c, out):
        el = v.type.element if isinstance(v.type, TensorType) else None
        if not isinstance(el, ScalarType) or el.name != "f32":
            em.fail("tt.dot_scaled with a non-fp32 accumulator or result",
                    "use out_dtype=tl.float32 and cast the result")
    if c.type != out.type:
        em.fail("tt.dot_scaled accumulator and result differ in layout")
    kpack_a = op.attrs.get("lhs_k_pack", True) is not False
    kpack_b = op.attrs.get("rhs_k_pack", True) is not False
    fast = bool(op.attrs.get("fastMath", False))
    (ra, ca), (rb, cb) = _shape(a), _shape(b)
    pa = 2 if fa == "e2m1" else 1
    pb = 2 if fb == "e2m1" else 1
    M = ra * (pa if not kpack_a else 1)
    K = ca * (pa if kpack_a else 1)
    kb = rb * (pb if kpack_b else 1)
    N = cb * (pb if not kpack_b else 1)
    if kb != K or _shape(out) != (M, N):
        em.fail(f"tt.dot_scaled shapes {_shape(a)} ({fa}) x {_shape(b)} ({fb}) -> {_shape(out)}"
                " do not match")
    ks = None
    scale_kinds = set()
    for s, rows in ((sa, M), (sb, N)):
        if s is None:
            continue
        el = s.type.element if isinstance(s.type, TensorType) else None
        kind = {"i8": "", "f8E4M3FN": "e4m3_"}.get(el.name if isinstance(el, ScalarType) else "")
        if kind is None:
            em.fail(f"tt.dot_scaled scale of element type {el}",
                    "scales are uint8 e8m0 (MX) or fp8e4nv (nvfp4)")
        scale_kinds.add(kind)
        sh = _shape(s)
        if len(sh) != 2 or sh[0] != rows or K % sh[1] or (ks is not None and sh[1] != ks):
            em.fail(f"tt.dot_scaled scale of shape {sh} for M={M}, N={N}, K={K}")
        ks = sh[1]
    sf = K // ks if ks else K
    if len(scale_kinds) > 1:
        em.fail("tt.dot_scaled with an e8m0 scale on one side and an fp8e4nv scale on the other")
    scale_kind = scale_kinds.pop() if scale_kinds else ""
    ct = "half" if "fp16" in (fa, fb) else "bfloat"
    suffix = ("f16" if ct == "half" else "bf16")
    need_fp8_support(em)

    # scratch: scales (bytes), then A' [M, KC] and B' [KC, N] in the compute type
    off_sb = align16(M * ks) if sa is not None else 0
    off_ops = off_sb + (align16(N * ks) if sb is not None else 0)
    kc = K
    while kc > 1 and off_ops + align16(M * kc * 2) + align16(kc * N * 2) > \
            THREADGROUP_MEMORY_BYTES:
        kc //= 2
    off_b = off_ops + align16(M * kc * 2)
    total = off_b + align16(kc * N * 2)
    if total > THREADGROUP_MEMORY_BYTES:
        em.fail(f"tt.dot_scaled needs {total} bytes of threadgroup memory (Metal has 32 KB)",
                "use smaller BLOCK_M / BLOCK_N")
    scratch = em.need_scratch(total)

    def value(fmt: str, raw: str, nib: int | None, scale: str | None, srow: str) -> str:
        v = _decode(fmt, raw, nib)
        if scale is None:
            return f"msl_mx_{suffix}({v})"
        fn = f"msl_mx_scaled_{scale_kind}{suffix}" + ("_fast" if fast else "")
        return f"{fn}({v}, {scale}[{srow} * {ks}u + kk / {sf}u])"

    def elements(fmt: str, packs: int, kpack: bool, is_a: bool, scale: str | None,
                 raw: str) -> list[tuple[str, str, str]]:
        out_l = []
        for e in range(packs):
            nib = e if fmt == "e2m1" else None
            if is_a:  # c0 = row (i), c1 = k
                row = f"c0 * {packs}u + {e}u" if (packs == 2 and not kpack) else "c0"
                k = f"c1 * {packs}u + {e}u" if (packs == 2 and kpack) else "c1"
            else:  # c0 = k, c1 = column (j); "row" names the column here
                k = f"c0 * {packs}u + {e}u" if (packs == 2 and kpack) else "c0"
                row = f"c1 * {packs}u + {e}u" if (packs == 2 and not kpack) else "c1"
            out_l.append((row, k, value(fmt, raw, nib, scale, "row")))
        return out_l

    L_a, L_b, L_o = em.layout(a), em.layout(b), em.layout(out)
    cname = em.name(c)
    d = em.declare(out)
    acc = em.fresh("acc")
    em.line(f"// msltrans-dot: path=dot_scaled k={K} kc={kc} lhs={fa} rhs={fb} compute={ct} "
            f"scale_factor={sf} scratch_bytes={total}")
    em.line("{")
    em.indent(1)
    if sa is not None:
        em.render("dot.scratch_region", ctype="uchar", name="ssa", scratch=scratch, byte_offset=0)
    if sb is not None:
        em.render("dot.scratch_region", ctype="uchar", name="ssb", scratch=scratch,
                  byte_offset=off_sb)
    em.render("dot.scratch_region", ctype=ct, name="sa", scratch=scratch, byte_offset=off_ops)
    em.render("dot.scratch_region", ctype=ct, name="sb", scratch=scratch, byte_offset=off_b)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // earlier scratch readers done")
    for s, dst in ((sa, "ssa"), (sb, "ssb")):
        if s is not None:
            Ls = em.layout(s)
            _render(em, "stage_scale", dst=dst, src=em.name(s), layout=Ls.name, regs=Ls.regs,
                    lane=LANE, warp=WARP)
    em.line(f"float {acc}[{L_o.regs}];")
    em.line(f"msl_unroll for (uint r = 0; r < {L_o.regs}u; ++r) {acc}[r] = float({cname}[r]);")
    em.line(f"for (uint k0 = 0, kc = {kc}u; k0 < {K}u; k0 += kc) {{")
    em.indent(1)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // scales staged, chunk read")
    _render(em, "stage_operand", layout=L_a.name, regs=L_a.regs, lane=LANE, warp=WARP,
            d0=L_a.coord_fn(0), d1=L_a.coord_fn(1), dst="sa", index=f"row * {kc}u + kk - k0",
            elements=elements(fa, pa, kpack_a, True, "ssa" if sa is not None else None,
                              f"{em.name(a)}[r]"))
    _render(em, "stage_operand", layout=L_b.name, regs=L_b.regs, lane=LANE, warp=WARP,
            d0=L_b.coord_fn(0), d1=L_b.coord_fn(1), dst="sb", index=f"(kk - k0) * {N}u + row",
            elements=elements(fb, pb, kpack_b, False, "ssb" if sb is not None else None,
                              f"{em.name(b)}[r]"))
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);")
    _render(em, "chunk_fma", acc=acc, regs=L_o.regs, lane=LANE, warp=WARP, d0=L_o.coord_fn(0),
            d1=L_o.coord_fn(1), kc=kc, n=N)
    em.indent(-1)
    em.line("}")
    em.line(f"msl_unroll for (uint r = 0; r < {L_o.regs}u; ++r) {d}[r] = {acc}[r];")
    em.indent(-1)
    em.line("}")
