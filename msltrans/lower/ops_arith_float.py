"""Float arith beyond + - * /: negation, remainder, the four IEEE min/max flavours.

Which min/max is which (docs/semantics.md): `tl.minimum`/`tl.maximum` give minnumf/maxnumf
(a NaN operand loses), `propagate_nan=ALL` gives minimumf/maximumf (a NaN wins); both order
-0.0 below +0.0, as NVIDIA's min.f32/max.f32 do. Metal leaves the sign of a zero result of
fmin/fmax open, so these call explicit helpers instead.
"""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowers
from msltrans.lower.support import need_support

FLOATS = ("float", "half", "bfloat")


def float_ctype(em: Emitter, op: Op) -> str:
    c = em.ctype(op.results[0])
    if c not in FLOATS:
        em.fail(f"{op.name} on {c}", "only f16, bf16 and f32 (f64 is downcast) are supported")
    return c


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


def _minmax(helper: str):  # noqa: ANN202
    def lower(em: Emitter, op: Op) -> None:
        c = float_ctype(em, op)
        need_support(em)
        em.elementwise(op, lambda a, b: f"{helper}<{c}>({a}, {b})")
    return lower


lowers("arith.maxnumf")(_minmax("msl_maxnum"))
lowers("arith.minnumf")(_minmax("msl_minnum"))
lowers("arith.maximumf")(_minmax("msl_maximum"))
lowers("arith.minimumf")(_minmax("msl_minimum"))
