"""The fma reference itself must be exact: check it against exact rational arithmetic."""

from fractions import Fraction

import numpy as np

from tests.support.fma import fma_chain_matmul, fma_f32


def _exact_fma(a: float, b: float, c: float) -> np.float32:
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    # Round the rational to float32, nearest-even, by bracketing with float32 neighbours.
    guess = np.float32(float(exact))
    lo, hi = (guess, np.nextafter(guess, np.float32(np.inf)))
    if Fraction(float(guess)) > exact:
        lo, hi = np.nextafter(guess, np.float32(-np.inf)), guess
    dlo, dhi = exact - Fraction(float(lo)), Fraction(float(hi)) - exact
    if dlo < dhi:
        return lo
    if dhi < dlo:
        return hi
    return lo if (lo.view(np.int32) & 1) == 0 else hi


def test_fma_matches_exact_rationals_on_hard_cases() -> None:
    rng = np.random.default_rng(1)
    n = 4000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    # c close to -a*b makes cancellation and double-rounding cases frequent.
    c = (-(a.astype(np.float64) * b) * (1 + rng.standard_normal(n) * 1e-7)).astype(np.float32)
    c[::3] = rng.standard_normal(len(c[::3])).astype(np.float32) * 1e-8
    got = fma_f32(a, b, c)
    want = np.array([_exact_fma(x, y, z) for x, y, z in zip(a, b, c, strict=True)],
                    dtype=np.float32)
    assert np.array_equal(got.view(np.int32), want.view(np.int32))
    # And it differs from the two-rounding a*b+c somewhere, or the test proves nothing.
    assert not np.array_equal(got, (a * b) + c)


def test_fma_specials() -> None:
    inf = np.float32(np.inf)
    got = fma_f32(np.array([inf, 0, np.nan, 1], np.float32), np.array([1, inf, 1, 1], np.float32),
                  np.array([1, 1, 1, -1], np.float32))
    assert np.isinf(got[0]) and np.isnan(got[1]) and np.isnan(got[2]) and got[3] == 0


def test_chain_matmul_order() -> None:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal((7, 3)).astype(np.float32)
    out = fma_chain_matmul(a, b)
    acc = np.zeros(3, np.float32)
    for k in range(7):
        acc = np.array([_exact_fma(a[1, k], b[k, j], acc[j]) for j in range(3)], np.float32)
    assert np.array_equal(out[1], acc)
