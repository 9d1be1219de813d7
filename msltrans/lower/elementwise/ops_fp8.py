"""fp8 as a storage format: conversions, constants, and the guard against fp8 arithmetic.

Apple GPUs have no fp8 unit; an fp8 tensor is a `uchar` array (msl_types). Decoding
f8E4M3FN / f8E5M2 to float, half or bfloat is exact; encoding follows Triton's NVIDIA backend
(measured on an H200, tests/data/cuda/fp8_conversions.npz): RTNE with "satfinite" (finite
overflow and ±inf become ±max), NaN becomes 0x7f; rtz is only defined for f32 -> f8E5M2
(truncation; ±inf stays ±inf), the one rtz fp8 downcast NVIDIA's backend compiles.
The helpers live in templates/fp8_support.metal. docs/semantics.md has the details.

This module lowers no op of its own: tt.fp_to_fp (ops_tt_math) calls `fp8_convert`,
arith.constant (ops_arith) calls `fp8_literal`, and `guard` runs before every op (registered
with `before_every_op`) so that arithmetic on an fp8 value refuses instead of computing on
the raw bytes.
"""

from __future__ import annotations

import math
import struct

from msltrans.ir.model import Op
from msltrans.ir.types import ScalarType, TensorType, Type
from msltrans.lower.emitter import Emitter
from msltrans.lower.msl_types import FP8_TYPES
from msltrans.lower.registry import before_every_op

# (mantissa bits, exponent bias, max finite code, has inf)
FORMATS = {"f8E4M3FN": (3, 7, 0x7E, False), "f8E5M2": (2, 15, 0x7B, True)}
FP8_SHORT = {"f8E4M3FN": "f8e4m3", "f8E5M2": "f8e5m2"}
# Ops that only move, select or reinterpret fp8 bytes, or convert them; anything else that
# takes or yields an fp8 value would compute on the bytes and is refused by `guard`.
STORAGE_OPS = frozenset({
    "tt.load", "tt.store", "tt.splat", "tt.broadcast", "tt.reshape", "tt.expand_dims",
    "tt.trans", "tt.join", "tt.split", "tt.cat", "ttg.convert_layout", "arith.select",
    "tt.bitcast", "tt.fp_to_fp", "tt.dot", "tt.dot_scaled", "arith.constant", "scf.for",
    "scf.yield", "scf.if", "scf.while", "scf.condition", "tt.return", "tt.gather",
})


def need_fp8_support(em: Emitter) -> None:
    em.include("fp8_support")


def fp8_name(t: Type) -> str | None:
    """The fp8 type name of a scalar or tensor element type, else None."""
    e = t.element if isinstance(t, TensorType) else t
    if isinstance(e, ScalarType) and e.name.startswith("f8"):
        return e.name
    return None


@before_every_op
def guard(em: Emitter, op: Op) -> None:
    """Refuse an op that would compute on fp8 bytes (Triton's front end casts first)."""
    if op.name in STORAGE_OPS:
        return
    for v in (*op.operands, *op.results):
        name = fp8_name(v.type)
        if name is not None:
            em.fail(f"{op.name} on {name}: Metal has no fp8 arithmetic",
                    "convert with .to(tl.float16) / .to(tl.float32) first; fp8 values can only "
                    "be loaded, stored, moved, selected, bitcast, converted and fed to tl.dot")


def decode_fn(name: str, dst_ctype: str) -> str:
    """MSL function taking an fp8 byte to `dst_ctype` (float, half or bfloat), exactly."""
    f = f"msl_{FP8_SHORT[name]}_to_float"
    if dst_ctype == "half":
        return f"msl_float_to_half_canon({f}"
    if dst_ctype == "bfloat":
        return f"msl_float_to_bfloat_canon({f}"
    return f"({f}"


def decode_expr(name: str, dst_ctype: str, x: str) -> str:
    return f"{decode_fn(name, dst_ctype)}({x}))"


def fp8_convert(em: Emitter, op: Op, rounding: str | None) -> None:
    """tt.fp_to_fp with an fp8 source or destination."""
    src_t, dst_t = op.operands[0].type, op.results[0].type
    src8, dst8 = fp8_name(src_t), fp8_name(dst_t)
    for n in (src8, dst8):
        if n is not None and n not in FP8_TYPES:
            em.fail(f"fp8 type {n} is not supported on Metal",
                 "use tl.float8e4nv or tl.float8e5")
    if src8 is not None and dst8 is not None:
        em.fail(f"fp_to_fp {src8} -> {dst8}: fp8 to fp8 conversion is not supported "
             "(Triton's NVIDIA backend does not compile it either)",
             "convert through tl.float16: x.to(tl.float16).to(dst)")
    need_fp8_support(em)
    if src8 is not None:
        dst = em.ctype(op.results[0])
        em.elementwise(op, lambda a: decode_expr(src8, dst, a))
        return
    assert dst8 is not None
    src = em.ctype(op.operands[0])
    if rounding == "rtz":
        if not (dst8 == "f8E5M2" and src == "float"):
            em.fail(f"fp_to_fp {src} -> {dst8} with rounding rtz is not supported (Triton's "
                 "NVIDIA backend only compiles rtz for fp32 -> float8e5)",
                 "use the default rounding (rtne)")
        em.elementwise(op, lambda a: f"msl_float_to_f8e5m2_rtz({a})")
        return
    if rounding not in (None, "rtne"):
        em.fail(f"fp_to_fp rounding mode {rounding}", "use 'rtne' or 'rtz'")
    fn = f"msl_float_to_{FP8_SHORT[dst8]}"
    em.elementwise(op, lambda a: f"{fn}(float({a}))")


# ---- constants ---------------------------------------------------------------------------
def _decode(code: int, name: str) -> float:
    mbits, bias, _, has_inf = FORMATS[name]
    s = -1.0 if code & 0x80 else 1.0
    e, m = (code & 0x7F) >> mbits, code & ((1 << mbits) - 1)
    emax = 0x7F >> mbits
    if has_inf and e == emax:
        return s * math.inf if m == 0 else math.nan
    if not has_inf and e == emax and m == (1 << mbits) - 1:
        return math.nan
    if e == 0:
        return s * m * 2.0 ** (1 - bias - mbits)
    return s * (1 + m / 2**mbits) * 2.0 ** (e - bias)


def fp8_code(value: float, name: str) -> int | None:
    """The fp8 bit pattern holding exactly `value` (NaN -> 0x7f), or None if none does."""
    if math.isnan(value):
        return 0x7F
    for code in range(256):
        d = _decode(code, name)
        if d == value and math.copysign(1.0, d) == math.copysign(1.0, value):
            return code
    return None


def fp8_literal(em: Emitter, value: object, t: Type) -> str:
    """MSL literal (a uchar) for an fp8 constant; MLIR prints fp8 values exactly."""
    name = fp8_name(t)
    assert name is not None
    if name not in FP8_TYPES:
        em.fail(f"fp8 type {name} is not supported on Metal")
    if isinstance(value, bool | int):
        value = float(value)
    if not isinstance(value, float):
        em.fail(f"fp8 constant {value!r} not readable")
    code = fp8_code(struct.unpack("<d", struct.pack("<d", value))[0], name)
    if code is None:
        em.fail(f"fp8 constant {value!r} is not a {name} value",
                "report the kernel: MLIR should print fp8 constants exactly")
    return f"uchar({code}u)"
