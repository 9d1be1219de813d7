"""Fit the float32 erf polynomials used by `msl_erf` (templates/elementwise_support.metal).

Metal has no erf. Two least-squares polynomial fits in float64 (numpy), checked in float32
with an exact fma (tests/support/fma.py) against math.erf:
    |x| <= CUT:        erf(x) = x + x * p(x**2)          (p fits erf(x)/x - 1)
    CUT < |x| < 3.93:  erf(x) = 1 - exp(q(|x|))          (q fits log(erfc(x)))
    |x| >= 3.93:       erf(x) = ±1 (the float32 rounding of erf there)
Run: python -m scripts.fit_erf  — prints the coefficients and the max error in ULP.
"""

from __future__ import annotations

import math

import numpy as np

from tests.support.fma import fma_f32

CUT, TOP = 0.875, 3.93
f32 = np.float32
erf = np.vectorize(math.erf)
erfc = np.vectorize(math.erfc)


def chebyshev_nodes(lo: float, hi: float, n: int) -> np.ndarray:
    return np.cos(np.linspace(0, np.pi, n)) * (hi - lo) / 2 + (hi + lo) / 2


def fit() -> tuple[list[np.float32], list[np.float32]]:
    x = chebyshev_nodes(0, CUT, 4000)
    x = x[x > 1e-4]
    p = np.polynomial.polynomial.polyfit(x * x, erf(x) / x - 1, 6, w=1 / (1 + erf(x) / x))
    t = chebyshev_nodes(CUT, TOP, 6000)
    q = np.polynomial.polynomial.polyfit(t, np.log(erfc(t)), 10)
    return [f32(c) for c in p], [f32(c) for c in q]


def horner(coefs: list[np.float32], v: np.ndarray) -> np.ndarray:
    r = np.full_like(v, coefs[-1])
    for c in reversed(coefs[:-1]):
        r = fma_f32(r, v, np.full_like(v, c))
    return r


def erf_f32(a: np.ndarray, p: list[np.float32], q: list[np.float32]) -> np.ndarray:
    a = a.astype(f32)
    t = np.abs(a)
    small = fma_f32(horner(p, (a * a).astype(f32)), a, a)
    large = np.copysign(f32(1) - np.exp(horner(q, t).astype(np.float64)).astype(f32), a)
    out = np.where(t > CUT, large, small).astype(f32)
    return np.where(t >= f32(TOP), np.copysign(f32(1), a), out).astype(f32)


def main() -> None:
    p, q = fit()
    rng = np.random.default_rng(0)
    xs = np.concatenate([np.linspace(-5, 5, 400001), rng.standard_normal(200000) * 2,
                         np.geomspace(1e-30, 1, 20000)]).astype(f32)
    want = erf(xs.astype(np.float64))
    w32 = np.abs(want.astype(f32))
    ulp = (np.nextafter(w32, f32(np.inf)) - w32).astype(np.float64)
    err = np.abs(erf_f32(xs, p, q).astype(np.float64) - want) / ulp
    print("p (x^2 powers, low to high):", [f"{c:.9e}" for c in p])
    print("q (|x| powers, low to high):", [f"{c:.9e}" for c in q])
    print(f"max error {err.max():.4f} ULP at x = {xs[err.argmax()]!r} (float32 emulation)")


if __name__ == "__main__":
    main()
