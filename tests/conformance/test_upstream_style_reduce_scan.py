"""Upstream-style reductions and scans (test_core's test_reduce1d, test_reduce2d,
test_scan2d, test_histogram, test_xor_sum, test_generic_reduction; test_standard's test_sort,
test_flip, test_topk), written for this project.

Integer results are exact; float sums are checked against float64 with a bound that covers
any summation order (the IR leaves the order to the backend). Ties in argmin/argmax pick the
lowest index (`tie_break_left`).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from tests.conformance.upstream_style_support import TORCH, assert_same, require_metal_sim, to_t
from tests.support.run_kernel import run_kernel


@pytest.fixture(scope="module", autouse=True)
def _metal_sim() -> None:
    require_metal_sim()


def _sum_close(got: float, x: np.ndarray) -> None:
    exact = float(np.sum(x.astype(np.float64)))
    bound = 1e-6 * len(x) * float(np.sum(np.abs(x.astype(np.float64)))) + 1e-30
    assert abs(float(got) - exact) <= bound, (float(got), exact)


# ------------------------------------------------------------------------------- reduce 1-D


@triton.jit
def _reduce1d(X, OUT, IDX, BLOCK: tl.constexpr, IS_INT: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(OUT + 0, tl.sum(x, axis=0).to(OUT.dtype.element_ty))
    tl.store(OUT + 1, tl.max(x, axis=0).to(OUT.dtype.element_ty))
    tl.store(OUT + 2, tl.min(x, axis=0).to(OUT.dtype.element_ty))
    if IS_INT:
        tl.store(OUT + 3, tl.xor_sum(x, axis=0).to(OUT.dtype.element_ty))
    tl.store(IDX + 0, tl.argmax(x, axis=0))
    tl.store(IDX + 1, tl.argmin(x, axis=0))


R1_OPS = ["sum", "max", "min", "xor_sum", "argmax", "argmin"]
R1_CONFIGS = [("int8", 128, 4), ("uint16", 64, 2), ("int32", 32, 1), ("int64", 128, 8),
              ("float16", 64, 4), ("float32", 512, 4)]


@functools.cache
def _reduce1d_run(dtype: str, block: int, num_warps: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One run of `_reduce1d` per configuration, shared by its `op` cases."""
    is_int = np.dtype(dtype).kind in "iu"
    rng = np.random.default_rng(block + num_warps)
    if is_int:
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -1000), min(info.max, 1000), block).astype(dtype)
    else:
        x = rng.standard_normal(block).astype(dtype)
    x[block // 3] = x[2 * block // 3] = x.max()  # ties: argmax must return the first one
    x[block // 5] = x[block - 1] = x.min()
    out = np.zeros(4, dtype="int64" if is_int else "float32")
    idx = np.zeros(2, dtype=np.int32)
    run_kernel(_reduce1d, (1,), x, out, idx, num_warps=num_warps, BLOCK=block, IS_INT=is_int)
    return x, out, idx


@pytest.mark.parametrize("dtype, block, num_warps, op", [
    (*c, op) for c in R1_CONFIGS for op in R1_OPS if op != "xor_sum" or c[0][0] in "iu"])
def test_reduce1d(dtype: str, block: int, num_warps: int, op: str) -> None:
    is_int = np.dtype(dtype).kind in "iu"
    x, out, idx = _reduce1d_run(dtype, block, num_warps)
    out_dtype = out.dtype
    if op == "sum":
        if is_int:  # accumulates in 32 bits (64 for int64), wrapping
            acc = np.int64 if dtype == "int64" else (np.uint32 if dtype[0] == "u" else np.int32)
            with np.errstate(over="ignore"):
                ref = x.astype(acc).sum(dtype=acc)
            assert out[0] == np.int64(ref)
        else:
            _sum_close(out[0], x)
    elif op in ("max", "min"):
        assert out[R1_OPS.index(op)] == getattr(x, op)().astype(out_dtype)
    elif op == "xor_sum":
        assert out[3] == np.bitwise_xor.reduce(x).astype(out_dtype)
    else:
        ref = np.argmax(x) if op == "argmax" else np.argmin(x)  # numpy: first occurrence
        assert idx[R1_OPS.index(op) - 4] == ref


# ------------------------------------------------------------------------------- reduce 2-D


@triton.jit
def _reduce2d(X, SUM, MAX, ARGMIN, M, N, stride_m, AXIS: tl.constexpr, BM: tl.constexpr,
              BN: tl.constexpr):
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    mask = (rm < M) & (rn < N)
    x = tl.load(X + rm * stride_m + rn, mask=mask, other=0)
    big = tl.load(X + rm * stride_m + rn, mask=mask, other=-1000)
    small = tl.load(X + rm * stride_m + rn, mask=mask, other=1000)
    if AXIS == 0:
        o = tl.arange(0, BN)
        om = o < N
        tl.store(SUM + o, tl.sum(x, axis=0), mask=om)
        tl.store(MAX + o, tl.max(big, axis=0), mask=om)
        tl.store(ARGMIN + o, tl.argmin(small, axis=0), mask=om)
    elif AXIS == 1:
        o = tl.arange(0, BM)
        om = o < M
        tl.store(SUM + o, tl.sum(x, axis=1), mask=om)
        tl.store(MAX + o, tl.max(big, axis=1), mask=om)
        tl.store(ARGMIN + o, tl.argmin(small, axis=1), mask=om)
    else:
        tl.store(SUM, tl.sum(x))
        tl.store(MAX, tl.max(big))
        tl.store(ARGMIN, tl.argmin(tl.reshape(small, BM * BN), axis=0))


@pytest.mark.parametrize("op", ["sum", "max", "argmin"])
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_reduce2d(dtype: str, axis: int | None, op: str) -> None:
    m, n, bm, bn = 7, 29, 8, 32
    rng = np.random.default_rng(3)
    x = (rng.integers(-99, 99, (m, n)) if dtype == "int32" else rng.standard_normal((m, n)) * 9)
    x = x.astype(dtype)
    x[2, 3] = x[5, 3] = x.min() - 1  # a tie down axis 0
    length = n if axis == 0 else (m if axis == 1 else 1)
    s, mx = (torch.zeros(length, dtype=TORCH[dtype]) for _ in range(2))
    am = torch.zeros(length, dtype=torch.int32)
    _reduce2d[(1,)](torch.from_numpy(x), s, mx, am, m, n, n, AXIS=axis, BM=bm, BN=bn)
    if op == "sum":
        ref = x.sum(axis=axis) if dtype == "int32" else x.astype(np.float64).sum(axis=axis)
        np.testing.assert_allclose(s.numpy(), np.atleast_1d(ref), rtol=1e-5, atol=1e-4)
    elif op == "max":
        np.testing.assert_array_equal(mx.numpy(), np.atleast_1d(x.max(axis=axis)))
    elif axis is None:  # the flat index into the padded (bm, bn) block
        r, c = np.unravel_index(np.argmin(x), x.shape)
        assert am.item() == r * bn + c
    else:
        np.testing.assert_array_equal(am.numpy(), np.argmin(x, axis=axis))


@triton.jit
def _keep_dims(X, Z, BM: tl.constexpr, BN: tl.constexpr):
    x = tl.load(X + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :])
    r = tl.max(x, axis=1, keep_dims=True)  # (BM, 1): broadcast back against x
    tl.store(Z + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], x - r)


def test_reduce_keep_dims_broadcasts_back() -> None:
    x = np.random.default_rng(4).standard_normal((4, 16)).astype(np.float32)
    z = np.zeros_like(x)
    run_kernel(_keep_dims, (1,), x, z, BM=4, BN=16)
    assert_same(z, x - x.max(axis=1, keepdims=True))


@triton.jit
def _argmax_pair_combine(v0, i0, v1, i1):
    take1 = (v1 > v0) | ((v1 == v0) & (i1 < i0))
    return tl.where(take1, v1, v0), tl.where(take1, i1, i0)


@triton.jit
def _generic_reduce(X, V, IDX, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    v, i = tl.reduce((x, offs), 0, _argmax_pair_combine)
    tl.store(V, v)
    tl.store(IDX, i)


def test_generic_tuple_reduction() -> None:
    x = np.random.default_rng(5).integers(-50, 50, 128).astype(np.int32)
    x[[17, 90]] = 77
    v, i = np.zeros(1, np.int32), np.zeros(1, np.int32)
    run_kernel(_generic_reduce, (1,), x, v, i, BLOCK=128)
    assert (v[0], i[0]) == (77, 17)


# -------------------------------------------------------------------------------------- scan


@triton.jit
def _scan2d(X, CSUM, CPROD, CMAX, AXIS: tl.constexpr, REVERSE: tl.constexpr,
            BM: tl.constexpr, BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    x = tl.load(X + offs)
    tl.store(CSUM + offs, tl.cumsum(x, axis=AXIS, reverse=REVERSE))
    tl.store(CPROD + offs, tl.cumprod(x, axis=AXIS, reverse=REVERSE))
    tl.store(CMAX + offs, tl.associative_scan(x, AXIS, _max_combine, reverse=REVERSE))


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


def _np_scan(fn, x: np.ndarray, axis: int, reverse: bool) -> np.ndarray:
    xs = np.flip(x, axis) if reverse else x
    r = fn(xs, axis=axis)
    return np.ascontiguousarray(np.flip(r, axis) if reverse else r)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_scan2d(dtype: str, axis: int, reverse: bool, op: str) -> None:
    bm, bn = 4, 32
    rng = np.random.default_rng(6)
    if dtype == "int32":
        x = rng.integers(-9, 9, (bm, bn)).astype(np.int32)
    else:
        x = (rng.uniform(0.5, 1.5, (bm, bn)) * rng.choice([-1, 1], (bm, bn))).astype(np.float32)
    outs = [torch.zeros(bm, bn, dtype=TORCH[dtype]) for _ in range(3)]
    _scan2d[(1,)](torch.from_numpy(x), *outs, AXIS=axis, REVERSE=reverse, BM=bm, BN=bn)
    got = outs[["cumsum", "cumprod", "cummax"].index(op)].numpy()
    if op == "cummax":
        np.testing.assert_array_equal(got, _np_scan(np.maximum.accumulate, x, axis, reverse))
    elif dtype == "int32":
        with np.errstate(over="ignore"):  # int32 products wrap
            fn = np.cumsum if op == "cumsum" else np.cumprod
            np.testing.assert_array_equal(got, _np_scan(lambda v, axis: fn(v, axis=axis,
                                                        dtype=np.int32), x, axis, reverse))
    else:
        fn = np.cumsum if op == "cumsum" else np.cumprod
        ref = _np_scan(fn, x.astype(np.float64), axis, reverse)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@triton.jit
def _cumsum_small(X, Z, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Z + offs, tl.cumsum(tl.load(X + offs), axis=0))


@pytest.mark.parametrize("dtype, out", [("int8", "int32"), ("uint8", "uint32"),
                                        ("int16", "int32")])
def test_cumsum_promotes_small_ints(dtype: str, out: str) -> None:
    """cumsum of an 8/16-bit int accumulates in 32 bits: no wrap at 127 / 255."""
    x = np.full(64, 100 if dtype != "int8" else 120, dtype=dtype)
    z = np.zeros(64, dtype=out)
    run_kernel(_cumsum_small, (1,), x, z, BLOCK=64)
    np.testing.assert_array_equal(z, np.cumsum(x.astype(out)))


# ------------------------------------------------------------------------ sort, topk, flip


@triton.jit
def _sort(X, Z, DESCENDING: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(Z + offs, tl.sort(tl.load(X + offs), descending=DESCENDING))


@pytest.mark.parametrize("dtype, descending", [("int32", False), ("uint8", True),
                                               ("float16", True), ("float32", False)])
def test_sort(dtype: str, descending: bool) -> None:
    m, n = 4, 32
    rng = np.random.default_rng(7)
    if dtype in ("int32", "uint8"):
        x = rng.integers(0 if dtype == "uint8" else -500, 250, (m, n)).astype(dtype)
    else:
        x = rng.standard_normal((m, n)).astype(dtype)
    xt = to_t(x, dtype) if dtype.startswith("float") else torch.from_numpy(x)
    z = torch.empty_like(xt)
    _sort[(1,)](xt, z, DESCENDING=descending, M=m, N=n)
    assert_same(z, torch.sort(xt, dim=1, descending=descending).values)


@triton.jit
def _topk(X, Z, K: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(Z + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@pytest.mark.parametrize("k", [4, 8])
def test_topk(k: int) -> None:
    x = torch.from_numpy(np.random.default_rng(8).permutation(4 * 32).astype(np.float32))
    x = x.reshape(4, 32).contiguous()
    z = torch.empty(4, k)
    _topk[(1,)](x, z, K=k, M=4, N=32)
    assert_same(z, torch.topk(x, k, dim=1).values)


@triton.jit
def _flip(X, Z, DIM: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(Z + offs, tl.flip(tl.load(X + offs), DIM))


@pytest.mark.parametrize("dim", [0, 1])
def test_flip(dim: int) -> None:
    x = np.random.default_rng(9).integers(-1000, 1000, (8, 16)).astype(np.int32)
    x[0, 0] = np.iinfo(np.int32).min
    z = np.zeros_like(x)
    run_kernel(_flip, (1,), x, z, DIM=dim, M=8, N=16)
    np.testing.assert_array_equal(z, np.flip(x, dim))


def test_flip_keeps_inf_and_nan() -> None:
    x = torch.tensor([[1.0, float("inf")], [float("-inf"), float("nan")]] * 4).reshape(8, 2)
    x = x.repeat(1, 8).contiguous()
    z = torch.empty_like(x)
    _flip[(1,)](x, z, DIM=1, M=8, N=16)
    assert_same(z, torch.flip(x, [1]))


# -------------------------------------------------------------------------------- histogram


@triton.jit
def _histogram(X, Z, n, BLOCK: tl.constexpr, BINS: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    if MASKED:
        h = tl.histogram(x, BINS, mask=offs < n)
    else:
        h = tl.histogram(x, BINS)
    tl.store(Z + tl.arange(0, BINS), h)


@pytest.mark.parametrize("block, bins, masked", [(128, 16, False), (256, 32, False),
                                                 (128, 8, True), (64, 64, True)])
def test_histogram(block: int, bins: int, masked: bool) -> None:
    x = torch.from_numpy(np.random.default_rng(block + bins).integers(0, bins, block)
                         .astype(np.int32))
    n = block - 37 if masked else block
    z = torch.zeros(bins, dtype=torch.int32)
    _histogram[(1,)](x, z, n, BLOCK=block, BINS=bins, MASKED=masked)
    ref = np.bincount(x.numpy()[:n], minlength=bins).astype(np.int32)
    np.testing.assert_array_equal(z.numpy(), ref)
