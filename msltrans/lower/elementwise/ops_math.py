"""The `math` dialect (what `tl.exp`, `tl.sqrt`, `tl.abs`, `tl.fma`, `tl.floor`, ... emit).

Exact functions (abs, floor, ceil, trunc, round, roundeven, copysign, fma) take f16, bf16
and f32: the 16-bit ones go through float, which is exact for them (fma through the
round-to-odd helper, so it rounds once). Transcendentals take f32 only, as Triton's own
`tl.math` type check does, and call `metal::precise::` so that a fast-math default of the
Metal compiler cannot swap in the approximate forms; their simulator error is measured in
tests/e2e/test_diff_math.py and stated in docs/semantics.md ("Math accuracy").
Integer ops of this dialect (absi, ctlz, cttz, ctpop) are in ops_arith_int.
"""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.lower.elementwise.ops_arith_float import float_ctype, fma_function
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowers
from msltrans.lower.support import need_support

_EXACT_1 = {
    "math.absf": "fabs", "math.floor": "floor", "math.ceil": "ceil", "math.trunc": "trunc",
    "math.round": "round",  # halfway cases away from zero, like llvm.round
    "math.roundeven": "rint",  # Metal's rint rounds to nearest even
}

_TRANSCENDENTAL_1 = {
    "math.exp": "precise::exp", "math.exp2": "precise::exp2", "math.log": "precise::log",
    "math.log2": "precise::log2", "math.log10": "precise::log10",
    # tl.sqrt / tl.rsqrt are Triton's fast forms (NVIDIA's sqrt.approx / rsqrt.approx):
    # Metal's fast:: ones (rsqrt <= 2 ulp; sqrt = x * rsqrt(x), MSL Table 8.2). tl.sqrt_rn
    # stays correctly rounded. exp/log stay precise: Table 8.2's fast exp bound grows with
    # |x| (3 + 2|x| ulp), far from NVIDIA's ex2.approx, and would break softmax's 8 ulp.
    "math.sqrt": "fast::sqrt", "math.rsqrt": "fast::rsqrt", "math.sin": "precise::sin",
    "math.cos": "precise::cos", "math.tan": "precise::tan", "math.tanh": "precise::tanh",
    "math.sinh": "precise::sinh", "math.cosh": "precise::cosh", "math.asin": "precise::asin",
    "math.acos": "precise::acos", "math.atan": "precise::atan", "math.asinh": "precise::asinh",
    "math.acosh": "precise::acosh", "math.atanh": "precise::atanh", "math.cbrt": "precise::cbrt",
    "math.erf": "msl_erf",
}

_TRANSCENDENTAL_2 = {"math.atan2": "precise::atan2", "math.powf": "precise::pow"}


def _exact_unary(em: Emitter, op: Op) -> None:
    c = float_ctype(em, op)
    fn = _EXACT_1[op.name]
    if c == "float":
        em.elementwise(op, lambda a: f"{fn}({a})")
    else:
        em.elementwise(op, lambda a: f"{c}({fn}(float({a})))")


for _name in _EXACT_1:
    lowers(_name)(_exact_unary)


@lowers("math.copysign")
def copysign(em: Emitter, op: Op) -> None:
    c = float_ctype(em, op)
    if c == "float":
        em.elementwise(op, lambda a, b: f"copysign({a}, {b})")
    else:
        em.elementwise(op, lambda a, b: f"{c}(copysign(float({a}), float({b})))")


@lowers("math.fma")
def fma(em: Emitter, op: Op) -> None:
    """One rounding (NVIDIA's fma.rn); Triton's interpreter rounds twice and is wrong."""
    function = fma_function(em, float_ctype(em, op))
    em.elementwise(op, lambda a, b, d: f"{function}({a}, {b}, {d})")


def _f32_only(em: Emitter, op: Op) -> None:
    c = float_ctype(em, op)
    if c != "float":
        em.fail(f"{op.name} on {c}",
                "cast to tl.float32 first (Triton's tl.math accepts only fp32/fp64 here)")


def _transcendental(em: Emitter, op: Op) -> None:
    _f32_only(em, op)
    if op.name == "math.erf":
        need_support(em)
    if op.name in _TRANSCENDENTAL_2:
        fn2 = _TRANSCENDENTAL_2[op.name]
        em.elementwise(op, lambda a, b: f"{fn2}({a}, {b})")
        return
    fn = _TRANSCENDENTAL_1[op.name]
    em.elementwise(op, lambda a: f"{fn}({a})")


for _name in (*_TRANSCENDENTAL_1, *_TRANSCENDENTAL_2):
    lowers(_name)(_transcendental)


@lowers("math.isnan", "math.isinf", "math.isfinite")
def fp_class(em: Emitter, op: Op) -> None:
    fn = op.name.split(".")[1]
    em.elementwise(op, lambda a: f"{fn}(float({a}))")
