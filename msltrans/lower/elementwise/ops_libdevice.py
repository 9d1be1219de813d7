"""tt.extern_elementwise: `tl.extra.libdevice` functions, by CUDA libdevice symbol name.

Kernels written against `triton.language.extra.libdevice` (and every kernel Inductor
generates) reach the IR as calls of `__nv_<name>f` (fp32) or `__nv_<name>` (fp64, downcast
per msl_types' fp64 policy). Each known symbol maps to MSL: `metal::precise::` functions, the
elementwise support helpers, or functions msltrans implements itself where Metal has none
(templates/libdevice_basic.metal and libdevice_special.metal: expm1, log1p, erfc, erfcx,
erfinv, lgamma, hypot, nextafter, ilogb, ldexp, cyl_bessel_i0/i1). CUDA's integer intrinsics
(popc, clz, brev, ffs, mulhi, mul24, sad, hadd, rhadd, abs, byte_perm and their unsigned and
64-bit forms) are exact, in libdevice_int.py. Any other symbol is refused by name, never
guessed. Accuracy of each: docs/semantics.md, "Math accuracy".
"""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.lower.elementwise.fp_int import float_to_int
from msltrans.lower.elementwise.libdevice_int import INT_FNS, lower_int
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowers
from msltrans.lower.support import need_libdevice, need_support

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
    # msltrans's own implementations (templates/libdevice_*.metal)
    "expm1": "msl_expm1", "log1p": "msl_log1p", "hypot": "msl_hypot",
    "nextafter": "msl_nextafter", "erfc": "msl_erfc", "erfcx": "msl_erfcx",
    "erfinv": "msl_erfinv", "lgamma": "msl_lgamma", "cyl_bessel_i0": "msl_i0",
    "cyl_bessel_i1": "msl_i1",
}
_PART = {"msl_expm1": "basic", "msl_log1p": "basic", "msl_hypot": "basic",
         "msl_nextafter": "basic", "msl_ldexp": "basic", "msl_ilogb": "basic",
         "msl_erfc": "special", "msl_erfcx": "special", "msl_erfinv": "special",
         "msl_lgamma": "special", "msl_i0": "special", "msl_i1": "special"}
_PREDICATES = {"isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
               "finitef": "isfinite", "signbit": "signbit"}  # libdevice returns int32
# Functions whose operands or result are not all float: name → (operand kinds, result kind)
_MIXED = {"ldexp": (("float", "int"), "float"), "ilogb": (("float",), "int"),
          "llrint": (("float",), "long")}
# Exact symbols that do not follow the `__nv_<name>[f]` pattern
_SYMBOLS = {"__nv_fmul_rn": "mul_rn", "__nv_dmul_rn": "mul_rn"}
# Symbols Inductor can emit that msltrans refuses, with the reason
_REFUSED = {
    "j0": "Bessel J0", "j1": "Bessel J1", "y0": "Bessel Y0", "y1": "Bessel Y1",
}
_KNOWN = set(_FLOAT_FNS) | set(_PREDICATES) | set(_MIXED) | {"mul_rn"}


def _base(symbol: str) -> str | None:
    if symbol in _SYMBOLS:
        return _SYMBOLS[symbol]
    if not symbol.startswith("__nv_"):
        return None
    name = symbol[len("__nv_"):]
    if name in _KNOWN:
        return name
    if name.endswith("f") and name[:-1] in _KNOWN:
        return name[:-1]
    if name.endswith("d") and name[:-1] in _PREDICATES:  # __nv_isnand
        return name[:-1]
    return None


def _refusal(symbol: str) -> str:
    name = symbol[len("__nv_"):] if symbol.startswith("__nv_") else symbol
    name = name[:-1] if name.endswith("f") and name[:-1] in _REFUSED else name
    if name in _REFUSED:
        return (f"extern function {symbol!r} ({_REFUSED[name]}) is not implemented by "
                "msltrans: Metal has no such function and msltrans has no validated one")
    return f"extern function {symbol!r} has no Metal equivalent in msltrans"


def _check_operands(em: Emitter, op: Op, symbol: str, kinds: tuple[str, ...]) -> None:
    got = tuple(em.ctype(v) for v in op.operands)
    if got != kinds:
        em.fail(f"{symbol} on {', '.join(got)}",
                f"this libdevice function takes ({', '.join(kinds)}) here (fp64 is downcast)")


@lowers("tt.extern_elementwise")
def extern_elementwise(em: Emitter, op: Op) -> None:
    symbol = str(op.attrs.get("symbol", ""))
    if symbol in INT_FNS:
        lower_int(em, op, symbol)
        return
    base = _base(symbol)
    if base is None:
        em.fail(_refusal(symbol),
                "use tl.* math, or one of the libdevice functions listed in "
                "msltrans/lower/elementwise/ops_libdevice.py")
    out = em.ctype(op.results[0])
    if base in _MIXED:
        kinds, result = _MIXED[base]
        _check_operands(em, op, symbol, kinds)
        if base == "llrint":  # round half to even, then NVIDIA's saturating conversion
            em.elementwise(op, lambda a: float_to_int("float", out, False, f"rint({a})"))
            return
        fn = f"msl_{base}"
        need_libdevice(em, _PART[fn])
        em.elementwise(op, lambda *args: f"{out}({fn}({', '.join(args)}))")
        return
    _check_operands(em, op, symbol, ("float",) * len(op.operands))
    if base == "mul_rn":  # one rounded product; fusion only ever applies to arith ops
        em.elementwise(op, lambda a, b: f"({a} * {b})")
        return
    if base in _PREDICATES:
        fn = _PREDICATES[base]
        em.elementwise(op, lambda a: f"{out}({fn}({a}))")
        return
    fn = _FLOAT_FNS[base]
    if fn in _PART:
        need_libdevice(em, _PART[fn])
    elif fn.startswith("msl_"):
        need_support(em)
    em.elementwise(op, lambda *args: f"{fn}({', '.join(args)})")
