"""1-D reductions over lengths 1..8192 (sampled; the full sweep is slow), keep_dims, Welford."""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from tests.support.reduce_ref import assert_float_same, float_minmax, int_reduce
from tests.support.run_kernel import run_kernel
from tests.support.values import mixed_values


@triton.jit
def reduce_1d(x_ptr, f_ptr, sum_ptr, max_ptr, fmax_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    f = tl.load(f_ptr + offs, mask=offs < n, other=float("-inf"))
    tl.store(sum_ptr, tl.sum(x, axis=0))
    tl.store(max_ptr, tl.max(x, axis=0))
    tl.store(fmax_ptr, tl.max(f, axis=0))


def _check_1d(n: int, num_warps: int) -> None:
    block = triton.next_power_of_2(n)
    x = mixed_values("uint32", n, seed=n)  # values past 2**31: unsigned max, wrapping sum
    f = mixed_values("float32", n, seed=n)
    outs = [np.zeros(1, np.uint32), np.zeros(1, np.uint32), np.zeros(1, np.float32)]
    run_kernel(reduce_1d, (1,), x, f, *outs, n, num_warps=num_warps, BLOCK=block)
    np.testing.assert_array_equal(outs[0], int_reduce(x, "sum", None, np.dtype(np.uint32)))
    np.testing.assert_array_equal(outs[1], [x.max()])
    fp = np.concatenate([f, np.full(block - n, -np.inf, np.float32)])
    assert_float_same(outs[2], np.atleast_1d(float_minmax(fp, "max", None, False)))


@pytest.mark.parametrize(("n", "num_warps"), [(1, 1), (3, 4), (33, 2), (1000, 8), (4097, 16),
                                              (8192, 4)])
def test_reduce_1d_lengths(n: int, num_warps: int) -> None:
    _check_1d(n, num_warps)


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2, 5, 31, 32, 63, 64, 127, 128, 255, 511, 777, 1024, 1025,
                               2047, 2048, 3000, 4096, 6001, 8191, 8192])
@pytest.mark.parametrize("num_warps", [1, 4, 16])
def test_reduce_1d_sweep(n: int, num_warps: int) -> None:
    _check_1d(n, num_warps)


@triton.jit
def keep_dims_kernel(x_ptr, r_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    rows = tl.sum(x, axis=1, keep_dims=True)  # [M, 1]
    cols = tl.max(x, axis=0, keep_dims=True)  # [1, N]
    tl.store(r_ptr + rm[:, None] + tl.zeros([M, 1], tl.int32), rows)
    tl.store(c_ptr + rn[None, :] + tl.zeros([1, N], tl.int32), cols)


def test_keep_dims() -> None:
    M, N = 8, 32
    x = mixed_values("int64", M * N, seed=7).reshape(M, N)
    r, c = np.zeros(M, np.int64), np.zeros(N, np.int64)
    run_kernel(keep_dims_kernel, (1,), x, r, c, num_warps=2, M=M, N=N)
    np.testing.assert_array_equal(r, int_reduce(x, "sum", 1, np.dtype(np.int64)))
    np.testing.assert_array_equal(c, x.max(axis=0))


@triton.jit
def _welford_combine(mean_a, m2_a, w_a, mean_b, m2_b, w_b):
    w = w_a + w_b
    delta = mean_b - mean_a
    frac = tl.where(w == 0.0, 0.0, w_b / w)
    return mean_a + delta * frac, m2_a + m2_b + delta * delta * w_a * frac, w


@triton.jit
def welford_kernel(x_ptr, mean_ptr, var_ptr, m, n, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    mask = (rm[:, None] < m) & (rn[None, :] < n)
    x = tl.load(x_ptr + rm[:, None] * n + rn[None, :], mask=mask, other=0.0)
    w = tl.where(mask, 1.0, 0.0)
    mean, m2, weight = tl.reduce((x, tl.zeros_like(x), w), 1, _welford_combine)
    tl.store(mean_ptr + rm, mean, mask=rm < m)
    tl.store(var_ptr + rm, m2 / weight, mask=rm < m)


@pytest.mark.parametrize("num_warps", [1, 8])
def test_welford(num_warps: int) -> None:
    m, n = 11, 200
    x = (np.random.default_rng(8).standard_normal((m, n)) * 3 + 5).astype(np.float32)
    mean, var = np.zeros(m, np.float32), np.zeros(m, np.float32)
    run_kernel(welford_kernel, (1,), x, mean, var, m, n, num_warps=num_warps, M=16, N=256)
    np.testing.assert_allclose(mean, x.astype(np.float64).mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(var, x.astype(np.float64).var(axis=1), rtol=1e-4)
