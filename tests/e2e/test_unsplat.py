"""tt.unsplat (tensor.item(), `if` on a 1-element tensor, reshape to ()): the scalar must
be the same in every thread, also in threads that do not own the element."""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from tests.support.run_kernel import compile_kernel, run_kernel


@triton.jit
def cond_kernel(x, EXPLICIT: tl.constexpr):
    condition = tl.load(x + tl.arange(0, 1)) > 42
    if EXPLICIT:
        condition = condition.item()
    if condition:
        tl.store(x, 42)


@pytest.mark.filterwarnings("ignore:If conditional called with multidimensional Tensor*")
@pytest.mark.parametrize("explicit", [False, True])
@pytest.mark.parametrize(("y", "want"), [(41, 41), (43, 42)])
def test_unsplat_condition(explicit: bool, y: int, want: int) -> None:
    x = np.full(1, y, np.int32)
    program = run_kernel(cond_kernel, (1,), x, num_warps=1, EXPLICIT=explicit)
    assert "tt.unsplat" in program.source
    assert x[0] == want


@triton.jit
def item_add_kernel(x, y, out, n, K: tl.constexpr, BLOCK: tl.constexpr):
    # Element K of x as a scalar, added to every element of a block that spans all warps.
    v = tl.load(x + K + tl.arange(0, 1)).item()
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(y + offs, mask=m) + v, mask=m)


def _vals(dtype: type, size: int, rng: np.random.Generator) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size, dtype=dtype, endpoint=True)
    return rng.standard_normal(size).astype(dtype)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8, np.float16, np.int32])
def test_item_seen_by_every_thread(num_warps: int, dtype: type) -> None:
    rng = np.random.default_rng(num_warps)
    n, block = 1000 + num_warps, 512
    x, y = _vals(dtype, 7, rng), _vals(dtype, n, rng)
    out = np.zeros(n, dtype)
    run_kernel(item_add_kernel, ((n + block - 1) // block,), x, y, out, n,
               num_warps=num_warps, K=5, BLOCK=block)
    if np.issubdtype(dtype, np.integer):  # wrap-around add
        ref = (y.astype(np.int64) + int(x[5])).astype(dtype)
        if dtype is np.int64:
            ref = (y.view(np.uint64) + np.uint64(x[5].view(np.uint64))).view(np.int64)
    else:
        ref = (y + x[5]).astype(dtype)
    assert out.tobytes() == ref.tobytes()


@triton.jit
def reduce_item_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n, other=0)
    s = tl.reshape(tl.max(v, axis=0, keep_dims=True), ())  # 1-element tensor → scalar
    tl.store(out + offs, v - s, mask=offs < n)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_reshape_to_scalar_after_reduce(num_warps: int, dtype: type) -> None:
    rng = np.random.default_rng(3)
    n = 301
    x = rng.integers(-1000, 1000, n).astype(dtype)
    out = np.zeros(n, dtype)
    run_kernel(reduce_item_kernel, (1,), x, out, n, num_warps=num_warps, BLOCK=512)
    ref = x - max(x.max(), 0)  # the masked tail loads 0
    assert out.tobytes() == ref.astype(dtype).tobytes()


def test_unsplat_source_reads_register_zero() -> None:
    x = np.zeros(8, np.float32)
    program = compile_kernel(item_add_kernel, (x, x, x, 8), 4, K=1, BLOCK=128)
    assert "every thread holds the element" in program.source
