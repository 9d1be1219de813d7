"""tt.extern_elementwise: the `tl.extra.libdevice` basics, by CUDA libdevice symbol name.

Kernels written against `triton.language.extra.libdevice` reach the IR as calls of
`__nv_<name>f` (fp32) or `__nv_<name>` (fp64, downcast per msl_types' fp64 policy). Each
known symbol maps to the same MSL as the equivalent `math` op (metal::precise::, the
support helpers); the integer bit functions (`__nv_popc`, `clz`, `brev`, `ffs` and their
64-bit `ll` forms) map to MSL's popcount/clz/reverse_bits/ctz on the unsigned bits, with
CUDA's results at 0 (clz(0) = width, ffs(0) = 0); any other symbol is refused, never guessed.
"""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowers
from msltrans.lower.support import need_support

# base name → MSL function taking float operands (arity from the op's operands)
_FLOAT_FNS = {
    "exp": "precise::exp", "exp2": "precise::exp2", "exp10": "precise::exp10",
    "log": "precise::log", "log2": "precise::log2", "log10": "precise::log10",
    "sin": "precise::sin", "cos": "precise::cos", "tan": "precise::tan",
    "asin": "precise::asin", "acos": "precise::acos", "atan": "precise::atan",
    "sinh": "precise::sinh", "cosh": "precise::cosh", "tanh": "precise::tanh",
    "asinh": "precise::asinh", "acosh": "precise::acosh", "atanh": "precise::atanh",
    "sqrt": "precise::sqrt", "rsqrt": "precise::rsqrt", "cbrt": "precise::cbrt",
    "erf": "msl_erf", "atan2": "precise::atan2", "pow": "precise::pow",
    "fmod": "precise::fmod", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "round": "round", "rint": "rint", "nearbyint": "rint", "fabs": "fabs",
    "copysign": "copysign", "fma": "fma",
}
# CUDA integer intrinsics: symbol → (operand MSL type, expression of the operand `{a}`).
# popc/clz/ffs return int32 whatever the width; brev keeps the operand's width. MSL's clz(0)
# and ctz(0) are the bit width, as CUDA's __clz(0); __ffs(0) is 0.
_INT_FNS = {
    "__nv_popc": ("int", "int(popcount(uint({a})))"),
    "__nv_popcll": ("long", "int(popcount(ulong({a})))"),
    "__nv_clz": ("int", "int(clz(uint({a})))"),
    "__nv_clzll": ("long", "int(clz(ulong({a})))"),
    "__nv_brev": ("int", "int(reverse_bits(uint({a})))"),
    "__nv_brevll": ("long", "long(reverse_bits(ulong({a})))"),
    "__nv_ffs": ("int", "({a} == 0 ? 0 : int(ctz(uint({a}))) + 1)"),
    "__nv_ffsll": ("long", "({a} == 0 ? 0 : int(ctz(ulong({a}))) + 1)"),
}
_PREDICATES = {"isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
               "finitef": "isfinite", "signbit": "signbit"}  # libdevice returns int32


def _base(symbol: str) -> str | None:
    if not symbol.startswith("__nv_"):
        return None
    name = symbol[len("__nv_"):]
    if name in _PREDICATES or name in _FLOAT_FNS:
        return name
    if name.endswith("f") and (name[:-1] in _FLOAT_FNS or name[:-1] in _PREDICATES):
        return name[:-1]
    if name.endswith("d") and name[:-1] in _PREDICATES:  # __nv_isnand
        return name[:-1]
    return None


@lowers("tt.extern_elementwise")
def extern_elementwise(em: Emitter, op: Op) -> None:
    symbol = str(op.attrs.get("symbol", ""))
    if symbol in _INT_FNS:
        want, expr = _INT_FNS[symbol]
        if len(op.operands) != 1 or em.ctype(op.operands[0]) != want:
            em.fail(f"{symbol} on {', '.join(em.ctype(v) for v in op.operands)}",
                    f"{symbol} takes one {want} operand")
        em.elementwise(op, lambda a: expr.format(a=a))
        return
    base = _base(symbol)
    if base is None:
        em.fail(f"extern function {symbol!r} has no Metal equivalent in msltrans",
                "use tl.* math, or one of the libdevice functions listed in "
                "msltrans/lower/ops_libdevice.py")
    if any(em.ctype(v) != "float" for v in op.operands):
        em.fail(f"{symbol} on {', '.join(em.ctype(v) for v in op.operands)}",
                "libdevice functions take fp32 (or fp64, downcast) operands")
    out = em.ctype(op.results[0])
    if base in _PREDICATES:
        fn = _PREDICATES[base]
        em.elementwise(op, lambda a: f"{out}({fn}({a}))")
        return
    fn = _FLOAT_FNS[base]
    if fn.startswith("msl_"):
        need_support(em)
    em.elementwise(op, lambda *args: f"{fn}({', '.join(args)})")
