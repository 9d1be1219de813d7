"""Float arith beyond + - * /: negation, remainder, the four IEEE min/max flavours.

Which min/max is which (docs/semantics.md): `tl.minimum`/`tl.maximum` give minnumf/maxnumf
(a NaN operand loses), `propagate_nan=ALL` gives minimumf/maximumf (a NaN wins); both order
-0.0 below +0.0, as NVIDIA's min.f32/max.f32 do. Metal leaves the sign of a zero result of
fmin/fmax open, so these call explicit helpers instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from msltrans.analysis.zero_sign import zero_sign_unseen
from msltrans.ir.model import Op, Value
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowers
from msltrans.lower.support import need_support

FLOATS = ("float", "half", "bfloat")


def float_ctype(em: Emitter, op: Op) -> str:
    c = em.ctype(op.results[0])
    if c not in FLOATS:
        em.fail(f"{op.name} on {c}", "only f16, bf16 and f32 (f64 is downcast) are supported")
    return c


def fma_function(em: Emitter, ctype: str) -> str:
    """The MSL function of a one-rounding fma (NVIDIA's fma.rn, which it also fuses f16/bf16
    `a*b+c` into: *_extra.npz muladd_*): Metal's `fma` for float and half (correctly rounded,
    MSL Table 8.3); bfloat has no `fma` (MSL 6.5), so msltrans's emulation."""
    if ctype == "bfloat":
        need_support(em)
        return "msl_fma16<bfloat>"
    return "fma"


@lowers("arith.negf")
def negf(em: Emitter, op: Op) -> None:
    float_ctype(em, op)
    em.elementwise(op, lambda a: f"-{a}")  # flips the sign bit, NaN and zero included


@lowers("arith.remf")
def remf(em: Emitter, op: Op) -> None:
    """C fmod (exact; result has the dividend's sign). Half/bfloat go through float: the
    exact remainder of two 16-bit floats is representable in their format."""
    c = float_ctype(em, op)
    if c == "float":
        em.elementwise(op, lambda a, b: f"precise::fmod({a}, {b})")
    else:
        em.elementwise(op, lambda a, b: f"{c}(precise::fmod(float({a}), float({b})))")


def _minmax(helper: str, plain: str | None = None):  # noqa: ANN202
    """`plain`: the Metal function with the same result up to the sign of a zero one, used
    for f32 where no use sees that sign (msltrans/analysis/zero_sign.py)."""
    def lower(em: Emitter, op: Op) -> None:
        c = float_ctype(em, op)
        if plain is not None and c == "float" and zero_sign_unseen(op.results[0], em):
            em.elementwise(op, lambda a, b: f"{plain}({a}, {b})")
            return
        need_support(em)
        em.elementwise(op, lambda a, b: f"{helper}<{c}>({a}, {b})")
    return lower


lowers("arith.maxnumf")(_minmax("msl_maxnum", "precise::fmax"))
lowers("arith.minnumf")(_minmax("msl_minnum", "precise::fmin"))
lowers("arith.maximumf")(_minmax("msl_maximum"))
lowers("arith.minimumf")(_minmax("msl_minimum"))


# ---- tt.clampf (the op is in ops_tt_math; NVIDIA's two lowerings are modelled here) ------

def _constant(em: Emitter, v: Value) -> float | None:
    producer = em.producers.get(v.id)
    if producer is not None and producer.name == "arith.constant":
        value = producer.attrs.get("value")
        return value if isinstance(value, float) else None
    return None


def _symmetric(em: Emitter, lo: Value, hi: Value) -> bool:
    """lo is -hi in a way the IR proves: `arith.negf hi`, or constants c and -c (the forms
    Triton's NVIDIA lowering turns into min.xorsign.abs; measured on an H200)."""
    producer = em.producers.get(lo.id)
    if producer is not None and producer.name == "arith.negf" and producer.operands[0] == hi:
        return True
    a, b = _constant(em, lo), _constant(em, hi)
    return (a is not None and b is not None and a == -b
            and math.copysign(1.0, a) != math.copysign(1.0, b))


def clamp_expr(em: Emitter, op: Op, propagate_nan: bool) -> Callable[[str, str, str], str]:
    """MSL for clamp(x, lo, hi): maxnum then minnum (-0 < +0), NaN from any operand when
    propagating; the symmetric form without propagation follows min.xorsign.abs."""
    c = float_ctype(em, op)
    need_support(em)
    _, lo, hi = op.operands
    if not propagate_nan and _symmetric(em, lo, hi):
        return lambda x, lo_, hi_: f"msl_clip_abs<{c}>({x}, {hi_})"
    plain = "msl_minnum<{c}>(msl_maxnum<{c}>({x}, {lo}), {hi})"
    if not propagate_nan:
        return lambda x, lo_, hi_: plain.format(c=c, x=x, lo=lo_, hi=hi_)
    return lambda x, lo_, hi_: (
        f"((isnan(float({x})) || isnan(float({lo_})) || isnan(float({hi_}))) ? {c}(NAN) : "
        + plain.format(c=c, x=x, lo=lo_, hi=hi_) + ")")
