"""numpy references for the shim tests: exact fp32 fma, bfloat rounding, ULP distance."""

from __future__ import annotations

import numpy as np


def fma_f32(a, b, c):
    """Correctly rounded float32 fma(a, b, c), vectorised.

    a*b is exact in float64 (48 significant bits). The float64 sum p + c is made
    round-to-odd with TwoSum (exact error e; if e != 0 and the sum's last bit is even, step
    one ulp towards e), and a round-to-odd result with >= p+2 extra bits rounds correctly to
    float32 (no double-rounding error)."""
    a, b, c = (np.asarray(x, np.float32).astype(np.float64) for x in (a, b, c))
    p = a * b
    s = p + c
    bp = s - c
    e = (p - bp) + (c - (s - bp))
    even = (s.view(np.int64) & 1) == 0
    towards = np.where(e > 0, np.inf, -np.inf)
    s = np.where((e != 0) & even & np.isfinite(s), np.nextafter(s, towards), s)
    return s.astype(np.float32)


def to_bf16(x):
    """float32 -> bfloat16 (round to nearest even), returned as float32 values."""
    x = np.asarray(x, np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32) << 16
    r = np.where(np.isnan(x), (u.astype(np.uint32) | 0x400000) & 0xFFFF0000, r).astype(np.uint32)
    return r.view(np.float32)


def bf16_bits(x):
    return (to_bf16(x).view(np.uint32) >> 16).astype(np.uint16)


def ulp_diff_f32(x, y):
    """Distance in float32 ulps (NaN == NaN, +0 == -0)."""
    x, y = np.asarray(x, np.float32), np.asarray(y, np.float32)

    def key(v):
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    d = np.abs(key(x) - key(y))
    both_nan = np.isnan(x) & np.isnan(y)
    one_nan = np.isnan(x) ^ np.isnan(y)
    return np.where(both_nan, 0, np.where(one_nan, 1 << 40, d))
