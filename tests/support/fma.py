"""Exactly rounded float32 fused multiply-add in numpy, and the in-order fma-chain matmul.

numpy has no fma. For float32 inputs the product a*b is exact in float64 (24+24 < 53 bits);
the sum p + c is rounded to float64 with *round-to-odd* (RN result nudged one ulp toward the
exact value when inexact and even), which makes the final float64 -> float32 rounding
correct: round-to-odd at p >= 2q + 2 bits followed by round-to-nearest is innocuous.
"""

from __future__ import annotations

import numpy as np


def fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    a64 = np.asarray(a, dtype=np.float32).astype(np.float64)
    b64 = np.asarray(b, dtype=np.float32).astype(np.float64)
    c64 = np.asarray(c, dtype=np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        p = a64 * b64  # exact
        s = p + c64
        # TwoSum: err is the exact rounding error of s = p + c.
        bb = s - p
        err = (p - (s - bb)) + (c64 - bb)
        bits = s.view(np.int64)
        inexact = (err != 0) & np.isfinite(s)
        even = (bits & 1) == 0
        toward = np.where(err > 0, np.inf, -np.inf)
        s = np.where(inexact & even, np.nextafter(s, toward), s)
        return s.astype(np.float32)


def fma_chain_matmul(a: np.ndarray, b: np.ndarray, acc: np.ndarray | None = None) -> np.ndarray:
    """out[i, j] = fma(a[i, K-1], b[K-1, j], ... fma(a[i, 0], b[0, j], acc[i, j])) in float32."""
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    m, k = a.shape
    k2, n = b.shape
    assert k == k2, (a.shape, b.shape)
    out = np.zeros((m, n), np.float32) if acc is None else np.array(acc, dtype=np.float32)
    for kk in range(k):
        out = fma_f32(a[:, kk : kk + 1], b[kk : kk + 1, :], out)
    return out
