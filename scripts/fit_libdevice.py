"""Fit the float32 polynomials of the libdevice functions msltrans implements itself
(msltrans/templates/libdevice_*.metal): expm1, log1p, erfcx (and so erfc), erfinv, lgamma,
sinpi,
cyl_bessel_i0/i1. Least squares in float64 on Chebyshev nodes against mpmath (40 digits);
coefficients are rounded to float32 and the script prints, per polynomial, the largest
error of the approximation in float32 ULP (exact arithmetic, float32 coefficients).
The errors of the MSL functions themselves (float32 arithmetic) are measured on the
simulator by tests/e2e/test_libdevice_accuracy.py and listed in docs/semantics.md.

Run: python scripts/fit_libdevice.py   (prints MSL-ready coefficient lines)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import mpmath as mp
import numpy as np

mp.mp.dps = 40
f32 = np.float32
ULP = 2.0**-24  # float32 unit roundoff relative to the value


def nodes(lo: float, hi: float, n: int = 3000) -> np.ndarray:
    return np.cos(np.linspace(0, np.pi, n)) * (hi - lo) / 2 + (hi + lo) / 2


def vec(fn: Callable[[mp.mpf], mp.mpf]) -> Callable[[np.ndarray], np.ndarray]:
    return np.vectorize(lambda v: float(fn(mp.mpf(float(v)))))


def lstsq(x: np.ndarray, y: np.ndarray, degree: int) -> list[np.float32]:
    return [f32(c) for c in np.polynomial.polynomial.polyfit(x, y, degree)]


def horner(coefs: list[np.float32], x: np.ndarray) -> np.ndarray:
    r = np.full_like(x, float(coefs[-1]))
    for c in reversed(coefs[:-1]):
        r = r * x + float(c)
    return r


def rel_ulp(approx: np.ndarray, exact: np.ndarray) -> float:
    return float(np.max(np.abs(approx - exact) / np.abs(exact)) / ULP)


def fit_expm1() -> tuple[list[np.float32], float]:
    """expm1(r) = r + r^2 q(r) on |r| <= 1/2 (used directly there, and for the reduced
    argument |r| <= ln2/2 beyond)."""
    r = nodes(-0.5, 0.5)
    r = r[np.abs(r) > 1e-6]
    c = lstsq(r, (np.expm1(r) - r) / (r * r), 6)
    return c, rel_ulp(r + r * r * horner(c, r), np.expm1(r))


def fit_log1p() -> tuple[list[np.float32], float]:
    """log(1+f) = f - (hfsq - s (hfsq + z R(z))), s = f/(2+f), z = s^2, hfsq = f^2/2,
    for f in [sqrt(2)/2 - 1, sqrt(2) - 1] (|s| <= 0.1716); R(z) = (2 atanh(s) - 2s) / (s z)."""
    s = nodes(1e-5, 0.1716)
    z = s * s
    f = 2 * s / (1 - s)
    exact = np.log1p(f)
    c = lstsq(z, (2 * np.arctanh(s) - 2 * s) / (s * z), 3)
    hfsq = f * f / 2
    return c, rel_ulp(f - (hfsq - s * (hfsq + z * horner(c, z))), exact)


ERFCX_PIECES = ((0.5, 2.0), (2.0, 4.0), (4.0, 6.5), (6.5, 10.06))


def fit_erfcx() -> list[tuple[float, np.float32, list[np.float32], float]]:
    """erfcx(x) = K exp(Q(x - m)) on each piece [lo, hi) with midpoint m, K = erfcx(m) in
    float32 and Q fitting log(erfcx(x) / K) (small, so its rounding barely moves exp)."""
    out = []
    for lo, hi in ERFCX_PIECES:
        mid = (lo + hi) / 2
        k = f32(float(mp.erfc(mid) * mp.exp(mp.mpf(mid) ** 2)))
        x = nodes(lo, hi, 2000)
        y = vec(lambda v, k=k: mp.log(mp.erfc(v) * mp.exp(v * v) / mp.mpf(float(k))))(x)
        c = lstsq(x - mid, y, 10)
        # the absolute error of Q is the relative error of exp(Q), in float32 ULP units
        out.append((mid, k, c, float(np.max(np.abs(horner(c, x - mid) - y)) / ULP)))
    return out


def fit_erfinv() -> tuple[list[np.float32], float, list[np.float32], float]:
    """erfinv(a) = a P(w), w = -log(1 - a^2), |a| <= 0.99; beyond, a T(sqrt(w) - 3)."""
    a = nodes(1e-3, 0.99)
    w = -np.log1p(-a * a)
    y = vec(mp.erfinv)(a)
    central = lstsq(w, y / a, 10)
    err_central = rel_ulp(a * horner(central, w), y)
    w_lo, w_hi = -math.log1p(-0.99**2), -math.log(2.0**-24 * (2 - 2.0**-24))
    s = nodes(math.sqrt(w_lo), math.sqrt(w_hi) + 0.01)
    a_t = vec(lambda v: mp.sqrt(1 - mp.exp(-v * v)))(s)
    y_t = vec(lambda v: mp.erfinv(mp.sqrt(1 - mp.exp(-v * v))))(s)
    tail = lstsq(s - 3, y_t / a_t, 10)
    return central, err_central, tail, rel_ulp(a_t * horner(tail, s - 3), y_t)


def fit_lgamma() -> dict[str, tuple[list[np.float32], float]]:
    """lgamma(1+t) = t A(t) for |t| <= 1/4; lgamma(2+t) = t B(t) for t in [-3/4, 1/2];
    sin(pi r) = r S(r^2) for r in [0, 1/2]."""
    lg = vec(lambda v: mp.loggamma(v).real)
    out = {}
    for name, centre, lo, hi, degree in (("A", 1, -0.25, 0.25, 10), ("B", 2, -0.75, 0.5, 12)):
        t = nodes(lo, hi)
        t = t[np.abs(t) > 1e-6]
        y = lg(centre + t)
        c = lstsq(t, y / t, degree)
        out[name] = (c, rel_ulp(t * horner(c, t), y))
    r = nodes(1e-6, 0.5)
    c = lstsq(r * r, np.sin(np.pi * r) / r, 6)
    out["sinpi"] = (c, rel_ulp(r * horner(c, r * r), np.sin(np.pi * r)))
    return out


def fit_bessel_i(n: int) -> tuple[list[np.float32], float, list[np.float32], float]:
    """|x| <= 8: the Taylor series in y = x^2/4 (i1: times x); |x| > 8:
    i_n(x) = exp(x) / sqrt(x) Q(8/x)."""
    k = range(15)
    if n == 0:
        small = [f32(1 / math.factorial(i) ** 2) for i in k]
    else:
        small = [f32(0.5 / (math.factorial(i) * math.factorial(i + 1))) for i in k]
    x = nodes(1e-6, 8)
    exact = vec(lambda v: mp.besseli(n, v))(x)
    approx = horner(small, x * x / 4) * (x if n else 1)
    t = nodes(1e-9, 1)
    q_exact = vec(lambda v: mp.besseli(n, 8 / v) * mp.exp(-8 / v) * mp.sqrt(8 / v))(t)
    large = lstsq(t, q_exact, 8)
    return small, rel_ulp(approx, exact), large, rel_ulp(horner(large, t), q_exact)


def msl(name: str, coefs: list[np.float32]) -> str:
    return f"{name} (low to high): " + ", ".join(f"{float(c):.9e}f" for c in coefs)


def main() -> None:
    c, e = fit_expm1()
    print(msl("expm1 q", c), f"  [{e:.3f} ULP]")
    c, e = fit_log1p()
    print(msl("log1p R", c), f"  [{e:.3f} ULP]")
    for mid, k, c, e in fit_erfcx():
        print(f"erfcx piece at {mid}: K = {float(k):.9e}f;", msl("Q", c), f"  [{e:.3f} ULP]")
    central, e1, tail, e2 = fit_erfinv()
    print(msl("erfinv central", central), f"  [{e1:.3f} ULP]")
    print(msl("erfinv tail", tail), f"  [{e2:.3f} ULP]")
    for name, (c, e) in fit_lgamma().items():
        print(msl(f"lgamma {name}", c), f"  [{e:.3f} ULP]")
    for n in (0, 1):
        small, e1, large, e2 = fit_bessel_i(n)
        print(msl(f"i{n} small", small), f"  [{e1:.3f} ULP]")
        print(msl(f"i{n} large", large), f"  [{e2:.3f} ULP]")


if __name__ == "__main__":
    main()
