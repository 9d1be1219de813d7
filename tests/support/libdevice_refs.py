"""The libdevice functions msltrans implements itself, run on the simulator over the whole
float32 range, and their float64 references.

Inputs: every 2^32/N-th float32 bit pattern (all exponents, both signs) with a random offset
in each stride, dense uniform samples where each function is delicate, and special values.
References are float64 (`math`, numpy, mpmath; erfinv by float64 Newton steps from the
float32 result), so the measured error is the float32 function's own.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from tests.e2e.test_diff_libdevice import compile_with_libdevice
from tests.support.diff import launch

BLOCK = 128
UNARY = ("expm1", "log1p", "erfc", "erfcx", "erfinv", "lgamma", "cyl_bessel_i0",
         "cyl_bessel_i1")
# libdevice functions that map to Metal's own (metal::precise::) or exact functions
MAPPED = ("exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
          "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "rsqrt", "erf", "floor", "ceil",
          "trunc", "nearbyint")
MAPPED_BINARY = ("pow", "atan2", "fmod", "copysign")
PREDICATES = ("isnan", "isinf", "signbit")
f32 = np.float32
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0,
                     1e-45, -1e-45, 1.1754942e-38, -1.1754942e-38, 1.17549435e-38,
                     3.4028235e38, -3.4028235e38, 1e-30, 1e30, 3.0, -3.0, 10.0, -2.5,
                     0.99999994, -0.99999994, 1.0000001, 88.72283, 89.0, -17.5, 9.4, -9.4,
                     10.06, 8.0, -8.0, 92.0], f32)


def whole_range(n: int, seed: int = 0) -> np.ndarray:
    """n float32 values spread over all bit patterns (both signs, every exponent)."""
    rng = np.random.default_rng(seed)
    stride = 2**32 // n
    bits = np.arange(n, dtype=np.uint64) * stride + rng.integers(0, stride, n, dtype=np.uint64)
    return bits.astype(np.uint32).view(f32)


def dense(lo: float, hi: float, n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, n).astype(f32)


@triton.jit
def _unary(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, libdevice.expm1(x), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.log1p(x), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.erfc(x), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.erfcx(x), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.erfinv(x), mask=m)
    tl.store(out_ptr + 5 * n + offs, libdevice.lgamma(x), mask=m)
    tl.store(out_ptr + 6 * n + offs, libdevice.cyl_bessel_i0(x), mask=m)
    tl.store(out_ptr + 7 * n + offs, libdevice.cyl_bessel_i1(x), mask=m)


@triton.jit
def _binary(x_ptr, y_ptr, k_ptr, out_ptr, ints_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    k = tl.load(k_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, libdevice.hypot(x, y), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.nextafter(x, y), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.mul_rn(x, y), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.ldexp(x, k), mask=m)
    tl.store(ints_ptr + 0 * n + offs, libdevice.ilogb(x).to(tl.int64), mask=m)
    tl.store(ints_ptr + 1 * n + offs, libdevice.llrint(x), mask=m)


@triton.jit
def _mapped(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, libdevice.exp(x), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.exp2(x), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.log(x), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.log2(x), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.log10(x), mask=m)
    tl.store(out_ptr + 5 * n + offs, libdevice.sin(x), mask=m)
    tl.store(out_ptr + 6 * n + offs, libdevice.cos(x), mask=m)
    tl.store(out_ptr + 7 * n + offs, libdevice.tan(x), mask=m)
    tl.store(out_ptr + 8 * n + offs, libdevice.asin(x), mask=m)
    tl.store(out_ptr + 9 * n + offs, libdevice.acos(x), mask=m)
    tl.store(out_ptr + 10 * n + offs, libdevice.atan(x), mask=m)
    tl.store(out_ptr + 11 * n + offs, libdevice.sinh(x), mask=m)
    tl.store(out_ptr + 12 * n + offs, libdevice.cosh(x), mask=m)
    tl.store(out_ptr + 13 * n + offs, libdevice.tanh(x), mask=m)
    tl.store(out_ptr + 14 * n + offs, libdevice.asinh(x), mask=m)
    tl.store(out_ptr + 15 * n + offs, libdevice.acosh(x), mask=m)
    tl.store(out_ptr + 16 * n + offs, libdevice.atanh(x), mask=m)
    tl.store(out_ptr + 17 * n + offs, libdevice.rsqrt(x), mask=m)
    tl.store(out_ptr + 18 * n + offs, libdevice.erf(x), mask=m)
    tl.store(out_ptr + 19 * n + offs, libdevice.floor(x), mask=m)
    tl.store(out_ptr + 20 * n + offs, libdevice.ceil(x), mask=m)
    tl.store(out_ptr + 21 * n + offs, libdevice.trunc(x), mask=m)
    tl.store(out_ptr + 22 * n + offs, libdevice.nearbyint(x), mask=m)


@triton.jit
def _mapped_binary(x_ptr, y_ptr, out_ptr, flags_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, libdevice.pow(x, y), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.atan2(x, y), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.fmod(x, y), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.copysign(x, y), mask=m)
    tl.store(flags_ptr + 0 * n + offs, libdevice.isnan(x), mask=m)
    tl.store(flags_ptr + 1 * n + offs, libdevice.isinf(x), mask=m)
    tl.store(flags_ptr + 2 * n + offs, libdevice.signbit(x), mask=m)


@functools.cache
def _mapped_programs() -> tuple:
    unary = compile_with_libdevice(_mapped, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                                   {"BLOCK": BLOCK})
    binary = compile_with_libdevice(
        _mapped_binary, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                         "flags_ptr": "*i32", "n": "i32"}, {"BLOCK": BLOCK})
    return unary, binary


def run_mapped(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    unary, binary = _mapped_programs()
    n = len(x)
    x, y = np.ascontiguousarray(x, f32), np.ascontiguousarray(y, f32)
    out = np.full(len(MAPPED) * n, np.nan, f32)
    launch(unary, (triton.cdiv(n, BLOCK),), x, out, n)
    result = dict(zip(MAPPED, out.reshape(len(MAPPED), n), strict=True))
    out2 = np.full(len(MAPPED_BINARY) * n, np.nan, f32)
    flags = np.full(len(PREDICATES) * n, -1, np.int32)
    launch(binary, (triton.cdiv(n, BLOCK),), x, y, out2, flags, n)
    result.update(zip(MAPPED_BINARY, out2.reshape(len(MAPPED_BINARY), n), strict=True))
    result.update(zip(PREDICATES, flags.reshape(len(PREDICATES), n), strict=True))
    return result


def mapped_references(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        return {
            "exp": np.exp(x64), "exp2": np.exp2(x64), "log": np.log(x64), "log2": np.log2(x64),
            "log10": np.log10(x64), "sin": np.sin(x64), "cos": np.cos(x64), "tan": np.tan(x64),
            "asin": np.arcsin(x64), "acos": np.arccos(x64), "atan": np.arctan(x64),
            "sinh": np.sinh(x64), "cosh": np.cosh(x64), "tanh": np.tanh(x64),
            "asinh": np.arcsinh(x64), "acosh": np.arccosh(x64), "atanh": np.arctanh(x64),
            "rsqrt": 1 / np.sqrt(x64), "erf": _vec(math.erf)(x), "floor": np.floor(x64),
            "ceil": np.ceil(x64), "trunc": np.trunc(x64), "nearbyint": np.rint(x64),
            "pow": np.power(x64, y64), "atan2": np.arctan2(x64, y64),
            "fmod": np.fmod(x64, y64), "copysign": np.copysign(x64, y64),
            "isnan": np.isnan(x64).astype(np.int32), "isinf": np.isinf(x64).astype(np.int32),
            "signbit": np.signbit(x64).astype(np.int32),
        }


@functools.cache
def _programs() -> tuple:
    unary = compile_with_libdevice(_unary, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                                   {"BLOCK": BLOCK})
    binary = compile_with_libdevice(
        _binary, {"x_ptr": "*fp32", "y_ptr": "*fp32", "k_ptr": "*i32", "out_ptr": "*fp32",
                  "ints_ptr": "*i64", "n": "i32"}, {"BLOCK": BLOCK})
    return unary, binary


def run_unary(x: np.ndarray) -> dict[str, np.ndarray]:
    program = _programs()[0]
    x = np.ascontiguousarray(x, f32)
    out = np.full(len(UNARY) * len(x), np.nan, f32)
    launch(program, (triton.cdiv(len(x), BLOCK),), x, out, len(x))
    return dict(zip(UNARY, out.reshape(len(UNARY), len(x)), strict=True))


def run_binary(x: np.ndarray, y: np.ndarray, k: np.ndarray) -> dict[str, np.ndarray]:
    program = _programs()[1]
    n = len(x)
    out = np.full(4 * n, np.nan, f32)
    ints = np.zeros(2 * n, np.int64)
    launch(program, (triton.cdiv(n, BLOCK),), np.ascontiguousarray(x, f32),
           np.ascontiguousarray(y, f32), np.ascontiguousarray(k, np.int32), out, ints, n)
    floats = out.reshape(4, n)
    return {"hypot": floats[0], "nextafter": floats[1], "mul_rn": floats[2],
            "ldexp": floats[3], "ilogb": ints[:n], "llrint": ints[n:]}


def _vec(fn: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    def apply(x: np.ndarray) -> np.ndarray:
        out = np.empty(x.shape, np.float64)
        for i, v in enumerate(x.astype(np.float64).tolist()):
            try:
                out[i] = fn(v)
            except (ValueError, OverflowError):
                out[i] = np.nan
        return out
    return apply


def _erfc(v: float) -> float:
    return math.erfc(v)


def _erfcx(v: float) -> float:
    if v < 25.0:
        return math.exp(v * v) * math.erfc(v) if v * v < 709 else math.inf
    r = 1.0 / (v * v)
    return (1.0 - r / 2 + 0.75 * r * r - 1.875 * r**3) / (v * math.sqrt(math.pi))


def _lgamma(v: float) -> float:
    if math.isinf(v):
        return math.inf
    if v <= 0 and v == math.floor(v):
        return math.inf
    return math.lgamma(v)


def _erfinv(x: np.ndarray, start: np.ndarray) -> np.ndarray:
    """float64 erfinv by Newton steps from the float32 result (erfc form for |x| > 1/2)."""
    x64 = x.astype(np.float64)
    y = np.where(np.isfinite(start), start.astype(np.float64), 0.0)
    erf, erfc = np.vectorize(math.erf), np.vectorize(math.erfc)
    big = np.abs(x64) > 0.5
    a = np.abs(x64)
    with np.errstate(all="ignore"):
        for _ in range(6):
            g = 2 / math.sqrt(math.pi) * np.exp(-y * y)
            step_small = (erf(y) - x64) / g
            step_big = -np.sign(x64) * (erfc(np.abs(y)) - (1 - a)) / g
            y = y - np.where(big, step_big, step_small)
        y = np.where(np.abs(x64) > 1, np.nan, y)
        y = np.where(np.abs(x64) == 1, np.sign(x64) * np.inf, y)
        return np.where(x64 == 0, x64, y)


def _bessel_i1(x64: np.ndarray) -> np.ndarray:
    """i1 in float64: the power series (all terms positive) for |x| <= 30, the asymptotic
    expansion beyond (relative error < 1e-13 at 30)."""
    a = np.abs(x64)
    small = np.minimum(a, 30.0)
    term = small / 2
    total = term.copy()
    for k in range(1, 90):
        term = term * (small / 2) ** 2 / (k * (k + 1))
        total = total + term
    big = np.maximum(a, 30.0)
    series, coef = np.ones_like(big), np.ones_like(big)
    for k in range(1, 8):  # (-1)^k prod_j (4 - (2j-1)^2) / (k! (8x)^k)
        coef = coef * (4 - (2 * k - 1) ** 2) / (k * 8 * big)
        series = series + coef * (-1) ** k
    with np.errstate(over="ignore"):
        large = np.exp(big) / np.sqrt(2 * np.pi * big) * series
    return np.sign(x64) * np.where(a <= 30.0, total, large)


def _bessel_i(order: int) -> Callable[[np.ndarray], np.ndarray]:
    """float64 references: numpy's i0; i1 by `_bessel_i1`."""
    def ref(x: np.ndarray) -> np.ndarray:
        x64 = x.astype(np.float64)
        with np.errstate(all="ignore"):
            if order == 0:
                out = np.where(np.abs(x64) > 100, np.inf, np.i0(np.clip(x64, -100, 100)))
            else:
                out = np.where(np.abs(x64) > 100, np.sign(x64) * np.inf,
                               _bessel_i1(np.clip(x64, -100, 100)))
        return np.where(np.isnan(x64), np.nan, out)
    return ref


def references(x: np.ndarray, got: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        return {
            "expm1": np.expm1(x64), "log1p": np.log1p(x64),
            "erfc": _vec(_erfc)(x), "erfcx": _vec(_erfcx)(x),
            "erfinv": _erfinv(x, got["erfinv"]), "lgamma": _vec(_lgamma)(x),
            "cyl_bessel_i0": _bessel_i(0)(x), "cyl_bessel_i1": _bessel_i(1)(x),
        }


def ulp_errors(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Error in float32 ULPs of the reference; 0 where both are the same NaN/infinity,
    inf where one is NaN or infinite and the other is not."""
    got64 = got.astype(np.float64)
    with np.errstate(all="ignore"):
        ref32 = ref.astype(f32)  # inf where the float64 value overflows float32
        same = (np.isnan(got64) & np.isnan(ref)) | (np.isinf(ref32) & (got64 == ref32))
        spacing = np.spacing(np.abs(ref32)).astype(np.float64)
        err = np.abs(got64 - ref) / spacing
    err = np.where(np.isnan(err) | np.isinf(ref32) | np.isnan(got64), np.inf, err)
    return np.where(same, 0.0, err)
