"""tt.reduce through unmodified @triton.jit kernels: dtypes × ops × axes, against numpy.

Inputs are loaded with masks from odd-sized tiles (padding reads 0), so the reference is the
same reduction over the zero-padded tile; integers compare bit-exactly, float max/min
bit-exactly (NaN = NaN), float sums within n·eps·Σ|x|.
"""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from tests.support.combine import bit_and, bit_or, max_nan, min_nan, mul
from tests.support.reduce_ref import (
    assert_float_same,
    assert_sum_close,
    float_minmax,
    int_reduce,
)
from tests.support.run_kernel import run_kernel
from tests.support.values import mixed_values


@triton.jit
def _store(ptr, v, m, n, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    if AXIS == 0:
        rn = tl.arange(0, N)
        tl.store(ptr + rn, v, mask=rn < n)
    elif AXIS == 1:
        rm = tl.arange(0, M)
        tl.store(ptr + rm, v, mask=rm < m)
    else:
        tl.store(ptr, v)


@triton.jit
def int_reductions(x_ptr, sum_ptr, max_ptr, min_ptr, prod_ptr, and_ptr, or_ptr, xor_ptr, m, n,
                   M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    mask = (rm[:, None] < m) & (rn[None, :] < n)
    x = tl.load(x_ptr + rm[:, None] * n + rn[None, :], mask=mask, other=0)
    _store(sum_ptr, tl.sum(x, axis=AXIS), m, n, M, N, AXIS)
    _store(max_ptr, tl.max(x, axis=AXIS), m, n, M, N, AXIS)
    _store(min_ptr, tl.min(x, axis=AXIS), m, n, M, N, AXIS)
    _store(prod_ptr, tl.reduce(x, AXIS, mul), m, n, M, N, AXIS)
    _store(and_ptr, tl.reduce(x, AXIS, bit_and), m, n, M, N, AXIS)
    _store(or_ptr, tl.reduce(x, AXIS, bit_or), m, n, M, N, AXIS)
    _store(xor_ptr, tl.xor_sum(x, axis=AXIS), m, n, M, N, AXIS)


@triton.jit
def float_reductions(x_ptr, y_ptr, sum_ptr, max_ptr, min_ptr, maxn_ptr, minn_ptr, m, n,
                     M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    mask = (rm[:, None] < m) & (rn[None, :] < n)
    x = tl.load(x_ptr + rm[:, None] * n + rn[None, :], mask=mask, other=0.0)
    y = tl.load(y_ptr + rm[:, None] * n + rn[None, :], mask=mask, other=0.0)
    _store(sum_ptr, tl.sum(y, axis=AXIS), m, n, M, N, AXIS)
    _store(max_ptr, tl.max(x, axis=AXIS), m, n, M, N, AXIS)
    _store(min_ptr, tl.min(x, axis=AXIS), m, n, M, N, AXIS)
    _store(maxn_ptr, tl.reduce(x, AXIS, max_nan), m, n, M, N, AXIS)
    _store(minn_ptr, tl.reduce(x, AXIS, min_nan), m, n, M, N, AXIS)


@triton.jit
def arg_reductions(x_ptr, amax_ptr, amin_ptr, vmax_ptr, m, n, M: tl.constexpr,
                   N: tl.constexpr, AXIS: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    mask = (rm[:, None] < m) & (rn[None, :] < n)
    x = tl.load(x_ptr + rm[:, None] * n + rn[None, :], mask=mask, other=0)
    _store(amax_ptr, tl.argmax(x, axis=AXIS), m, n, M, N, AXIS)
    _store(amin_ptr, tl.argmin(x, axis=AXIS), m, n, M, N, AXIS)
    v, _ = tl.max(x, axis=AXIS, return_indices=True)
    _store(vmax_ptr, v, m, n, M, N, AXIS)


def _padded(x: np.ndarray, M: int, N: int) -> np.ndarray:
    p = np.zeros((M, N), x.dtype)
    p[: x.shape[0], : x.shape[1]] = x
    return p


def _cut(r: np.ndarray, m: int, n: int, axis: int | None) -> np.ndarray:
    return r if axis is None else (r[:n] if axis == 0 else r[:m])


def _out(dtype: np.dtype, m: int, n: int, axis: int | None) -> np.ndarray:
    size = 1 if axis is None else (n if axis == 0 else m)
    return np.zeros(size, dtype)


def _widen(dtype: np.dtype) -> tuple[np.dtype, np.dtype]:
    """(sum dtype, max/min dtype) that tl.sum / tl.max produce for this input dtype."""
    if dtype.itemsize >= 4:
        return dtype, dtype
    return np.dtype(np.int32 if dtype.kind == "i" else np.uint32), np.dtype(np.int32)


SHAPE = (13, 37, 16, 64)  # m, n, M, N: an odd tile inside a power-of-two block
AXES = [0, 1, None]


SLOW = pytest.mark.slow


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("dtype", ["int8", pytest.param("int32", marks=SLOW), "int64",
                                   pytest.param("uint8", marks=SLOW), "uint32", "uint64"])
def test_int_reductions(dtype: str, axis: int | None) -> None:
    m, n, M, N = SHAPE
    dt = np.dtype(dtype)
    x = mixed_values(dtype, m * n, seed=1).reshape(m, n)
    sum_dt, mm_dt = _widen(dt)
    outs = {"sum": _out(sum_dt, m, n, axis), "max": _out(mm_dt, m, n, axis),
            "min": _out(mm_dt, m, n, axis)}
    for op in ("prod", "and", "or", "xor"):
        outs[op] = _out(dt, m, n, axis)
    run_kernel(int_reductions, (1,), x, *outs.values(), m, n, M=M, N=N, AXIS=axis)
    xp = _padded(x, M, N)
    for op, got in outs.items():
        src = xp.astype(mm_dt) if op in ("max", "min") else xp
        ref = np.atleast_1d(int_reduce(src, op, axis, got.dtype))
        np.testing.assert_array_equal(got, _cut(ref, m, n, axis), err_msg=op)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_float_reductions(dtype: str, axis: int | None) -> None:
    m, n, M, N = SHAPE
    x = mixed_values(dtype, m * n, seed=2).reshape(m, n)  # NaN, ±inf, -0.0, denormals
    x[3, :] = np.nan  # a row (and columns) with NaN everywhere in the row
    y = (np.random.default_rng(3).standard_normal((m, n)) * 10).astype(dtype)
    y[0, 0] = -0.0
    mm_dt = np.dtype(np.float32)  # tl.max/tl.min widen fp16 to fp32
    outs = [_out(np.dtype(dtype), m, n, axis), _out(mm_dt, m, n, axis), _out(mm_dt, m, n, axis),
            _out(np.dtype(dtype), m, n, axis), _out(np.dtype(dtype), m, n, axis)]
    run_kernel(float_reductions, (1,), x, y, *outs, m, n, M=M, N=N, AXIS=axis)
    xp, yp = _padded(x, M, N), _padded(y, M, N)
    assert_sum_close(outs[0], _cut_src(yp, m, n, axis), axis)
    for got, op, nan in ((outs[1], "max", False), (outs[2], "min", False),
                         (outs[3], "max", True), (outs[4], "min", True)):
        src = xp.astype(got.dtype)
        ref = np.atleast_1d(float_minmax(src, op, axis, nan)).astype(got.dtype)
        assert_float_same(got, _cut(ref, m, n, axis))


def _cut_src(xp: np.ndarray, m: int, n: int, axis: int | None) -> np.ndarray:
    """The padded tile restricted to the stored outputs (rows or columns kept)."""
    if axis == 0:
        return xp[:, :n]
    if axis == 1:
        return xp[:m, :]
    return xp


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", pytest.param("int32", marks=SLOW), "int64",
                                   pytest.param("uint32", marks=SLOW), "uint64"])
def test_argmin_argmax(dtype: str, axis: int) -> None:
    m, n, M, N = SHAPE
    rng = np.random.default_rng(4)
    if dtype == "float32":
        x = rng.integers(-3, 3, (m, n)).astype(np.float32)  # many ties
        x[x == 0] = -0.0  # -0.0 == +0.0: a tie, the smaller index wins
        x[1, 2] = 0.0
        x[5, :] = np.inf
        x[6, :] = -np.inf
    else:
        vals = mixed_values(dtype, 8, seed=5)  # extremes incl. past 2**31 / 2**63
        x = vals[rng.integers(0, len(vals), (m, n))]
    outs = [_out(np.dtype(np.int32), m, n, axis), _out(np.dtype(np.int32), m, n, axis),
            _out(x.dtype, m, n, axis)]
    run_kernel(arg_reductions, (1,), x, *outs, m, n, M=M, N=N, AXIS=axis)
    xp = _padded(x, M, N)
    np.testing.assert_array_equal(outs[0], _cut(xp.argmax(axis=axis), m, n, axis))
    np.testing.assert_array_equal(outs[1], _cut(xp.argmin(axis=axis), m, n, axis))
    np.testing.assert_array_equal(outs[2], _cut(xp.max(axis=axis), m, n, axis))


@pytest.mark.parametrize(("num_warps", "axis"), [(1, 0), (2, 1), (8, 0), (16, 1),
                                                 pytest.param(1, 1, marks=SLOW),
                                                 pytest.param(16, 0, marks=SLOW)])
def test_int_reductions_num_warps(num_warps: int, axis: int) -> None:
    m, n, M, N = 29, 61, 32, 64
    x = mixed_values("int32", m * n, seed=num_warps).reshape(m, n)
    outs = [_out(np.dtype(np.int32), m, n, axis) for _ in range(7)]
    run_kernel(int_reductions, (1,), x, *outs, m, n, num_warps=num_warps, M=M, N=N, AXIS=axis)
    xp = _padded(x, M, N)
    for op, got in zip(("sum", "max", "min", "prod", "and", "or", "xor"), outs, strict=True):
        np.testing.assert_array_equal(got, _cut(int_reduce(xp, op, axis, got.dtype), m, n, axis),
                                      err_msg=op)
