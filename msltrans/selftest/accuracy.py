"""What the specification promises for the MSL a kernel emitted, read from the MSL itself.

The bounds are the MSL specification's (Version 4, section 8.4): Table 8.1 for single-precision
functions outside fast math (`metal::precise::`, and unqualified calls, which a kernel
compiled in safe math mode gets), Table 8.2 for `metal::fast::`. "Correctly rounded" and
"0 ulp" rows are exact: the simulator's result is the only conforming one. Every other row is
approximate; a row the tables state as an implementation ("implemented as ...") or as an
absolute error, or a function the tables do not list, has no ULP bound here (None).

`scan(msl)` lists the approximate functions the kernels of `msl` can reach (helpers of the
support library that no kernel calls do not count), so a self-test case's exactness claim is
decided by what its kernels emit and cannot drift from the code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Bound:
    table: str              # "8.1" or "8.2"
    ulp: float | None       # 0: correctly rounded / 0 ulp; None: no ULP bound in the table
    note: str = ""



# Table 8.1: single precision, fast math off (precise:: and unqualified calls in safe mode).
PRECISE: dict[str, Bound] = {
    **{f: Bound("8.1", 0.0, "correctly rounded") for f in (
        "divide", "sqrt", "rsqrt", "ceil", "floor", "trunc", "rint", "round", "fma", "fract",
        "fdim", "ldexp")},
    **{f: Bound("8.1", 0.0, "0 ulp") for f in (
        "copysign", "fabs", "fmax", "fmin", "fmod", "frexp", "ilogb", "modf", "nextafter")},
    **{f: Bound("8.1", 4.0) for f in (
        "acos", "acosh", "asin", "asinh", "cos", "cosh", "cospi", "exp", "exp2", "exp10",
        "log", "log2", "log10", "sin", "sincos", "sinh", "sinpi")},
    **{f: Bound("8.1", 5.0) for f in ("atan", "atanh", "tanh")},
    **{f: Bound("8.1", 6.0) for f in ("atan2", "tan", "tanpi")},
    **{f: Bound("8.1", 16.0) for f in ("pow", "powr")},
}

# Table 8.2: single precision with fast math (metal::fast::).
FAST: dict[str, Bound] = {
    **{f: Bound("8.2", 0.0, "correctly rounded") for f in (
        "ceil", "floor", "trunc", "rint", "round", "fma", "fract", "fdim", "ldexp")},
    **{f: Bound("8.2", 0.0, "0 ulp") for f in (
        "copysign", "fabs", "fmax", "fmin", "frexp", "ilogb", "modf")},
    "divide": Bound("8.2", 2.5, "for |y| in [2^-126, 2^126]"),
    "rsqrt": Bound("8.2", 2.0),
    # "Implemented as x*rsqrt(x)": rsqrt's 2 ulp is a relative error of at most 2^-22,
    # which the product carries (up to 4 ulp of the result, whose ulp can be half as large
    # relative to it), plus the product's own rounding (0.5 ulp).
    "sqrt": Bound("8.2", 4.5, "x*rsqrt(x): 2 * 2 ulp + 0.5 ulp"),
    "exp": Bound("8.2", None, "3 + floor(|2x|) ulp: grows with |x|"),
    "exp2": Bound("8.2", None, "3 + floor(|2x|) ulp: grows with |x|"),
    "log": Bound("8.2", None, "absolute 2^-21 in [0.5, 2], else 3 ulp"),
    "log2": Bound("8.2", None, "absolute 2^-22 in [0.5, 2], else 2 ulp"),
    "sin": Bound("8.2", None, "absolute 2^-13 in [-pi, pi]"),
    "cos": Bound("8.2", None, "absolute 2^-13 in [-pi, pi]"),
    "atan": Bound("8.2", 5.0),
}

# Unqualified calls the scan looks for (precise in safe math mode; the rest of Table 8.1's
# names are exact and cannot change a claim).
_UNQUALIFIED = sorted(f for f, b in PRECISE.items() if b.ulp != 0.0)

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_QUALIFIED = re.compile(r"\b(?:metal::)?(fast|precise)::(\w+)\s*\(")
_PLAIN = re.compile(r"(?<![\w:.])(?:metal::)?(" + "|".join(_UNQUALIFIED) + r")\s*\(")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_HEAD_NAME = re.compile(r"([A-Za-z_]\w*)\s*(?:<[^(){};]*>)?\s*\($")
_MMA = re.compile(r"\bsimdgroup_multiply(?:_accumulate)?\s*\(")
# Section 6.7 gives no accuracy, summation order or rounding for the matrix products.
MMA_BOUND = Bound("6.7", None, "summation order and rounding unspecified")
_PRAGMA_SAFE = re.compile(r"#\s*pragma\s+METAL\s+fp\s+math_mode\s*\(\s*safe\s*\)")


@dataclass(frozen=True)
class Use:
    call: str               # as emitted: "fast::divide", "precise::exp", "exp"
    bound: Bound
    count: int

    @property
    def exact(self) -> bool:
        return self.bound.ulp == 0.0


def _definitions(text: str) -> tuple[dict[str, list[str]], list[str]]:
    """Top-level braces of `text` (comments removed): {name: [bodies]} of the functions,
    structs and namespaces defined there, and the bodies of the kernels."""
    defs: dict[str, list[str]] = {}
    kernels: list[str] = []
    depth, start, head_start = 0, 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                head = text[head_start:i]
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                body = text[start:i + 1]
                if re.search(r"\bkernel\b|\[\[\s*kernel\s*\]\]", head):
                    kernels.append(body)
                else:
                    head = re.sub(r"\btemplate\s*<[^{};]*?>", " ", head)
                    paren = head.find("(")
                    m = _HEAD_NAME.search(head[:paren + 1]) if paren >= 0 else None
                    names = [m.group(1)] if m else _IDENT.findall(head)[-1:]
                    for name in names:
                        defs.setdefault(name, []).append(body)
                head_start = i + 1
        elif ch == ";" and depth == 0:
            head_start = i + 1
    return defs, kernels


def reachable_code(msl: str) -> str:
    """The kernels' bodies and every top-level definition they reach by name."""
    text = _COMMENT.sub(" ", msl)
    defs, kernels = _definitions(text)
    seen: set[str] = set()
    todo = list(kernels)
    parts = list(kernels)
    while todo:
        for name in set(_IDENT.findall(todo.pop())):
            if name in defs and name not in seen:
                seen.add(name)
                parts.extend(defs[name])
                todo.extend(defs[name])
    return "\n".join(parts)


def scan(msl: str) -> list[Use]:
    """Every math function of Tables 8.1/8.2 the kernels of `msl` reach, with its bound."""
    code = reachable_code(msl)
    counts: dict[tuple[str, str], int] = {}
    for m in _QUALIFIED.finditer(code):
        key = (m.group(1), m.group(2))
        counts[key] = counts.get(key, 0) + 1
    for m in _PLAIN.finditer(code):
        key = ("", m.group(1))
        counts[key] = counts.get(key, 0) + 1
    uses = []
    mma = len(_MMA.findall(code))
    if mma:
        uses.append(Use("simdgroup_multiply_accumulate", MMA_BOUND, mma))
    for (mode, fn), n in sorted(counts.items()):
        table = FAST if mode == "fast" else PRECISE
        bound = table.get(fn, Bound("8.2" if mode == "fast" else "8.1", None,
                                    "not in the table"))
        uses.append(Use(f"{mode}::{fn}" if mode else fn, bound, n))
    return uses


def approximate(msl: str) -> list[Use]:
    """The uses of `scan(msl)` that are not exact (a nonzero or missing ULP bound)."""
    return [u for u in scan(msl) if not u.exact]


def has_safe_pragma(msl: str) -> bool:
    return bool(_PRAGMA_SAFE.search(msl))


def math_mode(fast_env: bool, msl_version: int, sources: list[str]) -> str:
    """The floating-point mode Apple's compiler applies: torch compiles with
    MTLMathModeFast when PYTORCH_MPS_FAST_MATH is set, which `#pragma METAL fp
    math_mode(safe)` (MSL 3.2, section 1.6.3) overrides where every kernel source has it."""
    if not fast_env:
        return "safe"
    if msl_version >= 320 and sources and all(has_safe_pragma(s) for s in sources):
        return "safe"
    return "fast"


def describe(uses: list[Use]) -> list[str]:
    out = []
    for u in uses:
        bound = ("no ULP bound" if u.bound.ulp is None else "exact" if u.exact
                 else f"<= {u.bound.ulp:g} ulp")
        note = f", {u.bound.note}" if u.bound.note else ""
        where = "section" if "." in u.bound.table and u.bound.table[0] == "6" else "Table"
        out.append(f"{u.call} x{u.count} ({where} {u.bound.table}: {bound}{note})")
    return out


SIM_ROUNDING = 0.5  # the simulator's IEEE operations are correctly rounded
ULP_REL = 2.0**-24  # the smallest ulp of a float relative to its value is 2^-24 (2^-23 largest)

# The simulator's own error for the precise functions (docs/semantics.md, "Math accuracy",
# asserted by tests/e2e/test_diff_math.py); its +, -, *, /, sqrt and fma are IEEE, and it
# computes fast::divide and fast::sqrt as IEEE division and square root.
SIM_ULP = {"exp": 0.51, "exp2": 0.51, "log": 0.8, "log2": 0.8, "sin": 0.6, "cos": 0.6}


def bound(call: str) -> float:
    """The table's ULP bound of an emitted call ("fast::divide", "precise::exp"); inf where
    the table gives none."""
    mode, _, fn = call.rpartition("::")
    b = (FAST if mode == "fast" else PRECISE).get(fn)
    return float("inf") if b is None or b.ulp is None else b.ulp


def sim_bound(call: str) -> float:
    """The simulator's error for the same call (0.5: correctly rounded)."""
    fn = call.rpartition("::")[2]
    return SIM_ULP.get(fn, 0.5)


def units(ulps: float) -> float:
    """An error of `ulps` ulp as a relative error in units of 2^-24 (one ulp of a float is
    at most 2^-23 of its value); a relative error of r units is at most r ulp of the result
    (one ulp is more than 2^-24 of the value)."""
    return 2.0 * ulps
