"""Dropout through the Metal driver on the simulator: the kernels of msltrans/workloads/dropout.py
(the workload of Triton's tutorial 04, whose own file runs unmodified out of tree through
scripts/run_tutorials.py), launched as `kernel[grid](...)` on CPU tensors.

References are numpy, written to the IR's semantics:
- mask dropout: `where(keep != 0, x / (1 - p), 0.0)` in float32; msltrans divides with IEEE
  division (docs/semantics.md), so outputs are compared bit for bit.
- seeded dropout: a numpy Philox4x32-10 written from `triton/language/random.py`
  (`randint4x` → `philox` → `philox_impl`, then `uint_to_uniform_float`), so the keep mask and
  every kept value must match exactly. Statistics (keep rate, determinism per seed) guard the
  reference itself.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from triton.runtime.driver import driver

from msltrans.workloads.dropout import keep_mask_dropout_kernel, mask_dropout, seeded_dropout


@pytest.fixture(autouse=True)
def sim_driver():
    active = driver.active
    if type(active).__name__ != "MetalDriver" or active.engine_name != "sim":
        pytest.skip("needs the Metal driver on the simulator engine")
    return active


# ---- numpy references --------------------------------------------------------------------

M32 = np.uint64(0xFFFFFFFF)
PHILOX_KEY_A, PHILOX_KEY_B = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
PHILOX_ROUND_A, PHILOX_ROUND_B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)


def philox4x32(seed: int, c0: np.ndarray, rounds: int = 10) -> np.ndarray:
    """First output word of Triton's `philox(seed, c0, 0, 0, 0)` for 32-bit counters.

    The seed is converted to uint64 the way Triton casts it (an i32/i64 argument sign-extends),
    split into key (lo, hi); umulhi/mul/add wrap in uint32 (held in uint64 lanes)."""
    s = int(np.int64(seed).astype(np.uint64))
    k0 = np.full(c0.shape, s & 0xFFFFFFFF, np.uint64)
    k1 = np.full(c0.shape, s >> 32, np.uint64)
    c0 = c0.astype(np.uint32).astype(np.uint64)
    c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    for _ in range(rounds):
        _c0, _c2 = c0, c2
        c0 = ((PHILOX_ROUND_B * _c2) >> np.uint64(32)) ^ c1 ^ k0
        c2 = ((PHILOX_ROUND_A * _c0) >> np.uint64(32)) ^ c3 ^ k1
        c1 = (PHILOX_ROUND_B * _c2) & M32
        c3 = (PHILOX_ROUND_A * _c0) & M32
        k0 = (k0 + PHILOX_KEY_A) & M32
        k1 = (k1 + PHILOX_KEY_B) & M32
    return c0.astype(np.uint32)


def uint_to_uniform_float(u: np.ndarray) -> np.ndarray:
    x = u.view(np.int32)
    x = np.where(x < 0, ~x, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


def rand_ref(seed: int, offsets: np.ndarray) -> np.ndarray:
    return uint_to_uniform_float(philox4x32(seed, offsets))


def dropout_ref(x: np.ndarray, keep: np.ndarray, p: float) -> np.ndarray:
    scale = np.float32(1) - np.float32(p)
    with np.errstate(all="ignore"):
        return np.where(keep, x / scale, np.float32(0.0)).astype(np.float32)


def seeded_ref(x: np.ndarray, p: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    keep = rand_ref(seed, np.arange(x.size, dtype=np.int32)) > np.float32(p)
    return dropout_ref(x, keep, p), keep


def _edge_values(n: int, gen: np.random.Generator) -> np.ndarray:
    x = gen.standard_normal(n).astype(np.float32) * 3
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-42, -1e-40, 3.4e38, -3.4e38,
                         1.17549435e-38], np.float32)
    x[: min(n, specials.size)] = specials[: min(n, specials.size)]
    return x


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.view(np.uint32).tobytes() == b.view(np.uint32).tobytes()


# ---- tests -------------------------------------------------------------------------------


def test_philox_reference_is_philox4x32_10():
    # Random123's published known-answer vector for philox4x32_10, counter = key = 0:
    # the first output word. Our reference with c0 = 0 and seed 0 must reproduce it.
    assert philox4x32(0, np.zeros(1, np.int32))[0] == 0x6627E8D5


@pytest.mark.parametrize("n, p", [(1, 0.5), (10, 0.5), (1000, 0.25), (1025, 0.1), (4099, 0.75)])
def test_dropout_with_mask_bits_equal_numpy(n, p):
    gen = np.random.default_rng(n)
    x = _edge_values(n, gen)
    keep = gen.integers(-2, 3, n).astype(np.int32)  # any non-zero keeps (tl.where on int32)
    out = mask_dropout(torch.from_numpy(x), torch.from_numpy(keep), p=p)
    assert _bits_equal(out.numpy(), dropout_ref(x, keep != 0, p))


def test_dropout_masked_tail_is_not_written():
    n = 1500
    x = torch.ones(2048)
    keep = torch.ones(2048, dtype=torch.int32)
    out = torch.full((2048,), -7.0)
    keep_mask_dropout_kernel[(2,)](x, keep, out, n, 0.5, BLOCK=1024)
    assert torch.all(out[:n] == 2.0) and torch.all(out[n:] == -7.0)


@pytest.mark.parametrize("n, p, seed", [
    (10, 0.5, 123), (10, 0.5, 512), (1000, 0.5, 0), (3001, 0.2, 2**31 - 1), (2049, 0.9, -5),
    (1024, 0.5, 2**40 + 12345),  # an i64 seed: the key's high word is non-zero
    (777, 0.3, -(2**33) - 1),
])
def test_seeded_dropout_matches_numpy_philox(n, p, seed):
    x = _edge_values(n, np.random.default_rng(n + 1))
    out = seeded_dropout(torch.from_numpy(x), p=p, seed=seed).numpy()
    ref, keep = seeded_ref(x, p, seed)
    assert _bits_equal(out, ref), f"{np.count_nonzero(out.view(np.uint32) != ref.view(np.uint32))}"
    # the mask itself: where x is non-zero, kept <=> output non-zero
    nz = (x != 0) & ~np.isnan(x)
    assert np.array_equal(out[nz] != 0, keep[nz])


def test_seeded_dropout_is_deterministic_per_seed_and_keeps_one_minus_p():
    n, p = 100_003, 0.3
    x = torch.from_numpy(np.random.default_rng(9).uniform(1, 2, n).astype(np.float32))
    a = seeded_dropout(x, p=p, seed=123).numpy()
    b = seeded_dropout(x, p=p, seed=123).numpy()
    c = seeded_dropout(x, p=p, seed=512).numpy()
    assert a.tobytes() == b.tobytes()
    assert a.tobytes() != c.tobytes()
    for out in (a, c):
        rate = np.count_nonzero(out) / n
        assert abs(rate - (1 - p)) < 5 * np.sqrt(p * (1 - p) / n)  # 5 sigma
        kept = out != 0
        assert np.array_equal(out[kept], (x.numpy() / np.float32(1 - np.float32(p)))[kept])
    # two seeds' masks agree where independent masks would: P(same) = p^2 + (1-p)^2
    agree = np.count_nonzero((a != 0) == (c != 0)) / n
    assert abs(agree - (p * p + (1 - p) ** 2)) < 0.01
