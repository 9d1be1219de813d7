"""tt.gather (tl.gather) through threadgroup scratch: 1-D and 2-D, both axes, odd index
patterns, several dtypes incl. int64 and int64 indices; refusal above 32 KB of source."""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from tests.support.run_kernel import compile_kernel, run_kernel


@triton.jit
def gather_1d(src_ptr, idx_ptr, out_ptr, S: tl.constexpr, NI: tl.constexpr):
    src = tl.load(src_ptr + tl.arange(0, S))
    idx = tl.load(idx_ptr + tl.arange(0, NI))
    tl.store(out_ptr + tl.arange(0, NI), tl.gather(src, idx, 0))


@triton.jit
def gather_2d(src_ptr, idx_ptr, out_ptr, AXIS: tl.constexpr, S0: tl.constexpr,
              S1: tl.constexpr, I0: tl.constexpr, I1: tl.constexpr):
    s_offs = tl.arange(0, S0)[:, None] * S1 + tl.arange(0, S1)[None, :]
    i_offs = tl.arange(0, I0)[:, None] * I1 + tl.arange(0, I1)[None, :]
    src = tl.load(src_ptr + s_offs)
    idx = tl.load(idx_ptr + i_offs)
    tl.store(out_ptr + i_offs, tl.gather(src, idx, AXIS))


def _src(dtype: type, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if dtype is np.int64:
        return rng.integers(-(2**63), 2**63 - 1, shape, dtype=np.int64)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8, np.float16])
@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
def test_gather_1d(num_warps: int, dtype: type, idx_dtype: type) -> None:
    rng = np.random.default_rng(num_warps)
    src = _src(dtype, (32,), rng)
    idx = rng.integers(0, 32, 64).astype(idx_dtype)
    out = np.zeros(64, dtype)
    run_kernel(gather_1d, (1,), src, idx, out, num_warps=num_warps, S=32, NI=64)
    assert out.tobytes() == src[idx].tobytes()


@pytest.mark.parametrize(("src_shape", "idx_shape", "axis"), [
    ((4, 4), (8, 4), 0), ((4, 4), (4096, 4), 0), ((128, 64), (256, 64), 0),
    ((128, 64), (128, 128), 1), ((16, 8), (16, 2), 1), ((8, 16), (2, 16), 0)])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_gather_2d(src_shape: tuple[int, int], idx_shape: tuple[int, int], axis: int,
                   num_warps: int) -> None:
    rng = np.random.default_rng(sum(idx_shape) + num_warps)
    src = _src(np.float32, src_shape, rng)
    idx = rng.integers(0, src_shape[axis], idx_shape).astype(np.int32)
    out = np.zeros(idx_shape, np.float32)
    run_kernel(gather_2d, (1,), src, idx, out, num_warps=num_warps, AXIS=axis,
               S0=src_shape[0], S1=src_shape[1], I0=idx_shape[0], I1=idx_shape[1])
    ref = np.take_along_axis(src, idx.astype(np.int64), axis)
    assert out.tobytes() == ref.tobytes()


@pytest.mark.parametrize("dtype", [np.int64, np.int16])
def test_gather_2d_int_axis1(dtype: type) -> None:
    rng = np.random.default_rng(5)
    src = _src(dtype, (32, 16), rng)
    idx = rng.integers(0, 16, (32, 32)).astype(np.int64)
    out = np.zeros((32, 32), dtype)
    run_kernel(gather_2d, (1,), src, idx, out, num_warps=4, AXIS=1, S0=32, S1=16, I0=32,
               I1=32)
    assert out.tobytes() == np.take_along_axis(src, idx, 1).tobytes()


def test_gather_out_of_range_index_reads_zero() -> None:
    # Undefined behaviour in Triton: msltrans reads a defined 0 instead of stray memory.
    src = np.arange(1, 33, dtype=np.int32)
    idx = np.array([0, 31, 32, -1, 1000, 5] + [2] * 58, np.int32)
    out = np.full(64, 7, np.int32)
    run_kernel(gather_1d, (1,), src, idx, out, num_warps=1, S=32, NI=64)
    assert list(out[:6]) == [1, 32, 0, 0, 0, 6]


def test_gather_source_over_32kb_is_refused() -> None:
    a = np.zeros(1, np.float32)
    with pytest.raises(MetalNonRecoverableError, match="threadgroup memory"):
        compile_kernel(gather_2d, (a, np.zeros(1, np.int32), a), 4, AXIS=0, S0=128, S1=128,
                       I0=128, I1=128)
