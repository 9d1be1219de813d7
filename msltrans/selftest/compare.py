"""Comparing outputs: bytes, ULP distance, tolerance against a float64 reference."""

from __future__ import annotations

import numpy as np

_FLOAT_BITS = {"float32": (np.uint32, 32), "float16": (np.uint16, 16), "bfloat16": (np.uint16, 16)}


def to_float64(bits: np.ndarray, dtype: str) -> np.ndarray:
    """Values of an output given as its raw bits (bf16 and fp8 have no numpy type)."""
    if dtype == "float32":
        return bits.view(np.float32).astype(np.float64)
    if dtype == "float16":
        return bits.view(np.float16).astype(np.float64)
    if dtype == "bfloat16":
        return (bits.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return bits.astype(np.float64)


def _ordered(bits: np.ndarray, width: int) -> np.ndarray:
    """Float bit patterns → integers in the order of the values (-0 and +0 adjacent)."""
    v = bits.astype(np.int64)
    sign = 1 << (width - 1)
    return np.where(v & sign, sign - (v & (sign - 1)) - 1, v + sign)


def max_ulp(got: np.ndarray, want: np.ndarray, dtype: str) -> float:
    """Largest distance in units in the last place between two arrays of float bits; NaN
    against NaN is 0 (payloads are not compared), NaN against a number is infinite."""
    if dtype not in _FLOAT_BITS:
        return 0.0 if np.array_equal(got, want) else float("inf")
    kind, width = _FLOAT_BITS[dtype]
    g, w = got.view(kind), want.view(kind)
    fg, fw = to_float64(g, dtype), to_float64(w, dtype)
    nan_g, nan_w = np.isnan(fg), np.isnan(fw)
    if (nan_g != nan_w).any():
        return float("inf")
    ok = ~nan_g
    if not ok.any():
        return 0.0
    return float(np.abs(_ordered(g[ok], width) - _ordered(w[ok], width)).max())


def within(got: np.ndarray, ref: np.ndarray, atol: float, rtol: float) -> tuple[bool, float]:
    """|got - ref| <= atol + rtol*|ref| everywhere (NaN where the reference has NaN);
    returns the verdict and the largest error relative to that bound."""
    return within_abs(got, ref, atol + rtol * np.abs(ref))


def ulps_from_reference(got: np.ndarray, ref: np.ndarray, dtype: str) -> float:
    """Largest |got - ref| in units of the last place of the reference rounded to `dtype`."""
    nan_g, nan_r = np.isnan(got), np.isnan(ref)
    if (nan_g != nan_r).any():
        return float("inf")
    ok = ~nan_r
    if not ok.any():
        return 0.0
    kind = {"float16": np.float16}.get(dtype, np.float32)
    spacing = np.spacing(np.abs(ref[ok]).astype(kind)).astype(np.float64)
    if dtype == "bfloat16":
        spacing = spacing * 2.0**16
    return float((np.abs(got[ok] - ref[ok]) / spacing).max())


def within_abs(got: np.ndarray, ref: np.ndarray, bound: np.ndarray) -> tuple[bool, float]:
    """|got - ref| <= bound element by element (NaN where the reference has NaN); returns
    the verdict and the largest error relative to its bound."""
    nan_g, nan_r = np.isnan(got), np.isnan(ref)
    if (nan_g != nan_r).any():
        return False, float("inf")
    ok = ~nan_r
    if not ok.any():
        return True, 0.0
    diff = np.abs(got[ok] - ref[ok])
    b = np.broadcast_to(bound, got.shape)[ok]
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.where(diff == 0, 0.0, diff / b)
    worst = float(err.max())
    return worst <= 1.0, worst
