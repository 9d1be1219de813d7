"""Triton's own elementwise ops: bitcast, fp_to_fp, clampf, precise sqrt/div, mulhiui.

fp_to_fp to or from fp8 is ops_fp8.fp8_convert."""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.ir.types import PointerType, ScalarType
from msltrans.lower import msl_types
from msltrans.lower.elementwise.ops_arith_float import clamp_expr
from msltrans.lower.elementwise.ops_fp8 import fp8_convert
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowers
from msltrans.lower.support import need_support


@lowers("tt.bitcast")
def bitcast(em: Emitter, op: Op) -> None:
    src_t = msl_types.element(op.operands[0].type)
    dst = em.ctype(op.results[0])
    if isinstance(src_t, PointerType):
        em.elementwise(op, lambda a: f"({dst}){a}")  # pointer reinterpretation
        return
    if em.ctype(op.operands[0]) == "bool" or dst == "bool":
        em.fail("bitcast of i1", "use a comparison or select instead")
    em.elementwise(op, lambda a: f"as_type<{dst}>({a})")


_ROUNDING = {0: "rtz", 1: "rtne", "rtz": "rtz", "rtne": "rtne"}


@lowers("tt.fp_to_fp")
def fp_to_fp(em: Emitter, op: Op) -> None:
    src_t = msl_types.element(op.operands[0].type)
    dst_t = msl_types.element(op.results[0].type)
    assert isinstance(src_t, ScalarType) and isinstance(dst_t, ScalarType)
    rounding = _ROUNDING.get(op.attrs.get("rounding"), op.attrs.get("rounding"))
    if src_t.name.startswith("f8") or dst_t.name.startswith("f8"):
        fp8_convert(em, op, rounding)  # software decode/encode (ops_fp8)
        return
    dst = em.ctype(op.results[0])
    if dst_t.bits < src_t.bits and rounding not in (None, "rtne", "rtz"):
        em.fail(f"fp_to_fp rounding mode {rounding}", "use 'rtne' or 'rtz'")
    if dst_t.bits < src_t.bits and rounding == "rtz":
        need_support(em)  # NVIDIA's cvt.rz: toward zero, overflow to the largest finite
        em.elementwise(op, lambda a: f"msl_round_to_zero<{dst}>(float({a}))")
        return
    if {src_t.name, dst_t.name} == {"f16", "bf16"}:
        em.elementwise(op, lambda a: f"{dst}(float({a}))")
    else:
        em.elementwise(op, lambda a: f"{dst}({a})")


@lowers("tt.clampf")
def clampf(em: Emitter, op: Op) -> None:
    prop = op.attrs.get("propagateNan")
    if prop in (0, "none", None, 0xFFFF, "all"):
        # NVIDIA's rules, incl. the symmetric clamp(x, -b, b) form (ops_arith_float).
        em.elementwise(op, clamp_expr(em, op, propagate_nan=prop in (0xFFFF, "all")))
    else:
        em.fail(f"clampf propagateNan = {prop!r}")


@lowers("tt.precise_sqrt")
def precise_sqrt(em: Emitter, op: Op) -> None:
    em.elementwise(op, lambda x: f"precise::sqrt({x})")


@lowers("tt.precise_divf")
def precise_divf(em: Emitter, op: Op) -> None:
    em.elementwise(op, lambda x, y: f"precise::divide({x}, {y})")


@lowers("tt.mulhiui")
def mulhiui(em: Emitter, op: Op) -> None:
    c = em.ctype(op.results[0])
    if c not in ("int", "long"):
        em.fail(f"mulhiui on {c}", "only i32 and i64")
    u = msl_types.unsigned(c)
    em.elementwise(op, lambda a, b: f"{c}(mulhi({u}({a}), {u}({b})))")
