"""Upstream-style loads and stores (test_core's test_masked_load, test_load_cache_modifier,
test_store_cache_modifier, test_store_eviction_policy, test_vectorization, test_store_constant,
test_load_store_same_ptr, test_pointer_arguments, test_addptr, test_strided loads, scalar
stores), written for this project. Launched as `kernel[grid](...)` on CPU tensors.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from tests.conformance.upstream_style_support import (
    TORCH,
    assert_same,
    mixed_np,
    require_metal_sim,
    to_t,
)
from tests.support.run_kernel import run_kernel


@pytest.fixture(scope="module", autouse=True)
def _metal_sim() -> None:
    require_metal_sim()


@triton.jit
def _masked_load(X, Z, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=OTHER)
    tl.store(Z + offs, x)


@pytest.mark.parametrize("dtype, other", [
    ("int8", -5), ("uint16", 7), ("int32", 0), ("int64", -(2**40)), ("float16", 1.5),
    ("bfloat16", -2.0), ("float32", float("-inf")), ("float32", float("nan")),
])
@pytest.mark.parametrize("n", [13, 64])
def test_masked_load_other(dtype: str, other: float, n: int) -> None:
    """Masked-off lanes read `other` (never memory); the tensor is exactly n long."""
    x = to_t(mixed_np(dtype, n, seed=1), dtype)
    z = torch.empty(64, dtype=TORCH[dtype])
    _masked_load[(1,)](x, z, n, OTHER=other, BLOCK=64)
    ref = torch.full((64,), other, dtype=TORCH[dtype])
    ref[:n] = x
    assert_same(z, ref)


@triton.jit
def _cache_modifiers(X, Z, n, LOAD_CM: tl.constexpr, EVICT: tl.constexpr,
                     STORE_CM: tl.constexpr, VOLATILE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, cache_modifier=LOAD_CM, eviction_policy=EVICT,
                volatile=VOLATILE)
    tl.store(Z + offs, x + 1, mask=m, cache_modifier=STORE_CM, eviction_policy=EVICT)


@pytest.mark.parametrize("load_cm, evict, store_cm, volatile", [
    ("", "", "", False), (".ca", "", "", False), (".cg", "evict_first", "", False),
    (".cv", "evict_last", ".wb", False), ("", "", ".cg", False), ("", "evict_first", ".cs",
                                                                  False),
    ("", "", ".wt", False), ("", "", "", True), (".cg", "evict_last", ".wb", True),
])
def test_cache_modifiers_and_eviction_are_hints(load_cm: str, evict: str, store_cm: str,
                                                volatile: bool) -> None:
    x = torch.arange(300, dtype=torch.int32)
    z = torch.zeros(300, dtype=torch.int32)
    _cache_modifiers[(triton.cdiv(300, 128),)](x, z, 300, LOAD_CM=load_cm, EVICT=evict,
                                               STORE_CM=store_cm, VOLATILE=volatile,
                                               BLOCK=128)
    assert torch.equal(z, x + 1)


@triton.jit
def _copy(X, Z, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Z + offs, tl.load(X + offs, mask=m), mask=m)


@pytest.mark.parametrize("n, block, num_warps", [
    (1, 128, 4), (129, 128, 4), (1000, 256, 2), (4099, 1024, 8), (4099, 1024, 1),
])
def test_vectorized_copy_odd_sizes(n: int, block: int, num_warps: int) -> None:
    x = torch.from_numpy(mixed_np("float32", n, seed=n))
    z = torch.full((n + 5,), -3.0)
    _copy[(triton.cdiv(n, block),)](x, z, n, BLOCK=block, num_warps=num_warps)
    assert_same(z[:n], x)
    assert torch.all(z[n:] == -3.0)  # nothing past n written


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "bfloat16"])
def test_copy_dtypes(dtype: str) -> None:
    n = 77
    if dtype == "bool":
        x = torch.from_numpy(np.random.default_rng(2).random(n) > 0.5)
    else:
        x = to_t(mixed_np(dtype, n, seed=3), dtype)
    z = torch.zeros(n, dtype=TORCH[dtype])
    _copy[(2,)](x, z, n, BLOCK=64)
    assert_same(z, x)


@triton.jit
def _strided_2d(X, Z, M, N, sxm, sxn, szm, szn, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    rn = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    m = (rm < M) & (rn < N)
    x = tl.load(X + rm * sxm + rn * sxn, mask=m)
    tl.store(Z + rm * szm + rn * szn, x * 2, mask=m)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "offset_view"])
def test_strided_2d(layout: str) -> None:
    base = torch.from_numpy(np.random.default_rng(4).standard_normal((40, 70))
                            .astype(np.float32))
    x = {"contiguous": base, "transposed": base.t(), "sliced": base[::3, 1::2],
         "offset_view": base[5:33, 9:60]}[layout]
    z = torch.empty(x.shape[1], x.shape[0]).t()  # a column-major output
    m, n = x.shape
    grid = (triton.cdiv(m, 16), triton.cdiv(n, 32))
    _strided_2d[grid](x, z, m, n, x.stride(0), x.stride(1), z.stride(0), z.stride(1),
                      BM=16, BN=32)
    assert_same(z.contiguous(), (x * 2).contiguous())


@triton.jit
def _scalar_ops(X, Z, v, BLOCK: tl.constexpr):
    tl.store(Z, tl.load(X) + v)  # scalar load, scalar store
    tl.store(Z + 1, tl.sum(tl.load(X + tl.arange(0, BLOCK)), axis=0))
    tl.store(Z + 2 + tl.arange(0, BLOCK), tl.full((BLOCK,), 7, tl.int32))  # a constant
    tl.store(Z + 2 + BLOCK, v * 3)


def test_scalar_and_constant_stores() -> None:
    x = torch.arange(10, 26, dtype=torch.int32)
    z = torch.zeros(19, dtype=torch.int32)
    _scalar_ops[(1,)](x, z, 5, BLOCK=16)
    assert z[0] == 15 and z[1] == int(x.sum()) and torch.all(z[2:18] == 7) and z[18] == 15


@triton.jit
def _inplace(X, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m)
    tl.store(X + offs, x * x - 1, mask=m)


def test_load_store_same_ptr() -> None:
    x = torch.arange(-50, 50, dtype=torch.int64) * (2**20)
    ref = x * x - 1
    _inplace[(4,)](x, 100, BLOCK=32)
    assert torch.equal(x, ref)


@triton.jit
def _addptr(X, Z, step, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = X + (BLOCK * step - 1)  # scalar pointer arithmetic, then a negative tensor offset
    p = p - offs * step
    tl.store(Z + offs, tl.load(p))


@pytest.mark.parametrize("step", [1, 3])
def test_addptr_negative_offsets(step: int) -> None:
    x = np.arange(96, dtype=np.int32) * 3
    z = np.zeros(32, dtype=np.int32)
    run_kernel(_addptr, (1,), x, z, step, BLOCK=32)
    np.testing.assert_array_equal(z, x[32 * step - 1 - np.arange(32) * step])


@triton.jit
def _int64_index(X, Z, base, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK).to(tl.int64) + base
    tl.store(Z + tl.arange(0, BLOCK), tl.load(X + (offs - base) * 2 + (base - base)))


def test_int64_offset_arithmetic() -> None:
    """An i64 scalar argument > 2**31 enters the offset arithmetic without truncation."""
    x = np.arange(64, dtype=np.float32)
    z = np.zeros(32, dtype=np.float32)
    run_kernel(_int64_index, (1,), x, z, 2**33 + 7, BLOCK=32)
    np.testing.assert_array_equal(z, x[::2])


@triton.jit
def _other_tensor(X, OTHER, Z, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=tl.load(OTHER + offs))
    tl.store(Z + offs, x)


def test_masked_load_tensor_other() -> None:
    x, o = np.arange(32, dtype=np.float32), -np.arange(32, dtype=np.float32) - 1
    z = np.zeros(32, dtype=np.float32)
    run_kernel(_other_tensor, (1,), x, o, z, 20, BLOCK=32)
    np.testing.assert_array_equal(z, np.where(np.arange(32) < 20, x, o))
