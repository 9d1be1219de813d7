"""Float → integer conversion with the saturation NVIDIA applies (docs/semantics.md).

LLVM calls NaN and out-of-range fptosi/fptoui results poison; Triton's CUDA backend
computes (measured): round toward zero, saturate to the target's range, NaN → 0 — except
that 8-bit targets are converted as 16-bit ones (cvt.rzi.sat.s16/u16) and then keep the low
byte, so 128.0 → -128 as i8 and 256.0 → 0 as u8, and that NaN → i64/u64 gives the bit
pattern 0x8000000000000000 (INT64_MIN, or 2**63 unsigned). This module only builds expressions; the
ops live in ops_arith (arith.fptosi / arith.fptoui).
"""

from __future__ import annotations

from msltrans.lower import msl_types
from msltrans.lower.values import float_literal, int_literal

_BITS = {"char": 8, "short": 16, "int": 32, "long": 64}
_SIGNED = {16: "short", 32: "int", 64: "long"}


def float_to_int(src: str, dst: str, is_unsigned: bool, a: str) -> str:
    """MSL for converting `a` (of MSL float type `src`) to the integer storage type `dst`."""
    x = a if src == "float" else f"float({a})"  # half/bfloat are exact in float
    bits = max(_BITS[dst], 16)  # 8-bit targets saturate at 16 bits first
    s = _SIGNED[bits]
    nan = int_literal(-(1 << 63), "long") if bits == 64 else f"{s}(0)"
    if is_unsigned:
        u = msl_types.unsigned(s)
        nan = f"{u}({nan})"
        top = float_literal(2.0**bits, "float")
        umax = f"{u}(~{u}(0))"
        # !(x > 0): zeros and negatives give 0; (0, 1) truncates to 0 anyway.
        sat = (f"(isnan({x}) ? {nan} : !({x} > 0.0f) ? {u}(0) : {x} >= {top} ? {umax} : "
               f"{u}({x}))")
    else:
        top = float_literal(2.0 ** (bits - 1), "float")
        lo, hi = int_literal(-(1 << (bits - 1)), s), int_literal((1 << (bits - 1)) - 1, s)
        sat = (f"(isnan({x}) ? {nan} : {x} >= {top} ? {hi} : {x} <= -{top} ? {lo} : "
               f"{s}({x}))")
    return sat if _SIGNED.get(bits) == dst and not is_unsigned else f"{dst}({sat})"
