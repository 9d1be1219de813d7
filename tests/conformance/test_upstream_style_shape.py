"""Upstream-style shape ops (test_core's test_broadcast, test_expand_dims, test_reshape,
test_trans_2d / test_trans_4d, test_permute, test_join, test_split, test_interleave, test_cat,
test_arange, test_full, test_where_broadcast; test_standard's test_ravel, test_swizzle2d,
test_cdiv), written for this project. References are numpy's own reshape/transpose/stack.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from tests.conformance.upstream_style_support import require_metal_sim
from tests.support.run_kernel import run_kernel


@pytest.fixture(scope="module", autouse=True)
def _metal_sim() -> None:
    require_metal_sim()


def _ints(shape: tuple[int, ...], seed: int = 0, dtype: str = "int32") -> np.ndarray:
    return np.random.default_rng(seed).integers(-1000, 1000, shape).astype(dtype)


@triton.jit
def _broadcast(X, Y, Z, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, M))[:, None]  # (M, 1)
    y = tl.load(Y + tl.arange(0, N))[None, :]  # (1, N)
    z = x * 1000 + y
    tl.store(Z + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], z)


@pytest.mark.parametrize("dtype", ["int16", "int32", "float32"])
def test_broadcast(dtype: str) -> None:
    x, y = _ints((8,), 1, dtype), _ints((32,), 2, dtype)
    x = (x % 30).astype(dtype)
    z = np.zeros((8, 32), dtype=dtype)
    run_kernel(_broadcast, (1,), x, y, z, M=8, N=32)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(z, (x[:, None] * 1000 + y[None, :]).astype(dtype))


@triton.jit
def _expand_dims(X, Z, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    a = tl.expand_dims(x, 0)  # (1, N)
    b = tl.expand_dims(a, (2, 3))  # (1, N, 1, 1)
    tl.static_assert(b.shape == [1, N, 1, 1])
    c = tl.reshape(b, (N,))
    tl.store(Z + tl.arange(0, N), c + tl.sum(tl.reshape(a, (N,)), axis=0))


def test_expand_dims() -> None:
    x, z = _ints((16,), 3), np.zeros(16, np.int32)
    run_kernel(_expand_dims, (1,), x, z, N=16)
    np.testing.assert_array_equal(z, x + x.sum())


@triton.jit
def _reshape(X, Z, M: tl.constexpr, N: tl.constexpr, M2: tl.constexpr, N2: tl.constexpr):
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    y = tl.reshape(x, (M2, N2))
    tl.store(Z + tl.arange(0, M2)[:, None] * N2 + tl.arange(0, N2)[None, :], y)


@pytest.mark.parametrize("shape, new", [((4, 32), (8, 16)), ((16, 8), (2, 64)),
                                        ((2, 64), (128, 1)), ((1, 64), (8, 8))])
def test_reshape(shape: tuple[int, int], new: tuple[int, int]) -> None:
    x = _ints(shape, 4)
    z = np.zeros(new, np.int32)
    run_kernel(_reshape, (1,), x, z, M=shape[0], N=shape[1], M2=new[0], N2=new[1])
    np.testing.assert_array_equal(z, x.reshape(new))


@triton.jit
def _trans(X, Z, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(Z + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], tl.trans(x))


@pytest.mark.parametrize("m, n, dtype", [(8, 32, "int32"), (32, 4, "float16"),
                                         (16, 16, "int8")])
def test_trans_2d(m: int, n: int, dtype: str) -> None:
    x = _ints((m, n), 5, dtype) if dtype != "float16" else _ints((m, n), 5).astype(dtype)
    z = np.zeros((n, m), dtype)
    run_kernel(_trans, (1,), x, z, M=m, N=n)
    np.testing.assert_array_equal(z, x.T)


@triton.jit
def _permute3(X, Z, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, P0: tl.constexpr,
              P1: tl.constexpr, P2: tl.constexpr, S0: tl.constexpr, S1: tl.constexpr,
              S2: tl.constexpr):
    i = tl.arange(0, A)[:, None, None]
    j = tl.arange(0, B)[None, :, None]
    k = tl.arange(0, C)[None, None, :]
    x = tl.load(X + i * (B * C) + j * C + k)
    y = tl.permute(x, (P0, P1, P2))
    o0 = tl.arange(0, S0)[:, None, None]
    o1 = tl.arange(0, S1)[None, :, None]
    o2 = tl.arange(0, S2)[None, None, :]
    tl.store(Z + o0 * (S1 * S2) + o1 * S2 + o2, y)


@pytest.mark.parametrize("perm", [(0, 2, 1), (1, 0, 2), (2, 1, 0), (1, 2, 0), (2, 0, 1)])
def test_permute_3d(perm: tuple[int, int, int]) -> None:
    shape = (2, 4, 8)
    x = _ints(shape, 6)
    ref = np.ascontiguousarray(np.transpose(x, perm))
    z = np.zeros_like(ref)
    run_kernel(_permute3, (1,), x, z, A=2, B=4, C=8, P0=perm[0], P1=perm[1], P2=perm[2],
               S0=ref.shape[0], S1=ref.shape[1], S2=ref.shape[2])
    np.testing.assert_array_equal(z, ref)


@triton.jit
def _join_split(X, Y, J, S0, S1, IL, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    j = tl.join(x, y)  # (N, 2)
    tl.store(J + offs[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    a, b = tl.split(tl.reshape(x, (N // 2, 2)))
    tl.store(S0 + tl.arange(0, N // 2), a)
    tl.store(S1 + tl.arange(0, N // 2), b)
    tl.store(IL + tl.arange(0, 2 * N), tl.interleave(x, y))


@functools.cache
def _join_split_run(dtype: str) -> tuple[np.ndarray, ...]:
    """One run of `_join_split` per dtype, shared by its three `part` cases."""
    n = 32
    x = _ints((n,), 7).astype(dtype)
    y = _ints((n,), 8).astype(dtype)
    j, il = np.zeros((n, 2), dtype), np.zeros(2 * n, dtype)
    s0, s1 = np.zeros(n // 2, dtype), np.zeros(n // 2, dtype)
    run_kernel(_join_split, (1,), x, y, j, s0, s1, il, N=n)
    return x, y, j, s0, s1, il


@pytest.mark.parametrize("part", ["join", "split", "interleave"])
@pytest.mark.parametrize("dtype", ["int32", "float32", "uint8"])
def test_join_split_interleave(dtype: str, part: str) -> None:
    x, y, j, s0, s1, il = _join_split_run(dtype)
    if part == "join":
        np.testing.assert_array_equal(j, np.stack([x, y], axis=-1))
    elif part == "split":
        np.testing.assert_array_equal(s0, x[0::2])
        np.testing.assert_array_equal(s1, x[1::2])
    else:
        np.testing.assert_array_equal(il, np.stack([x, y], axis=-1).reshape(-1))


@triton.jit
def _cat(X, Y, Z, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    y = tl.load(Y + tl.arange(0, N))
    z = tl.cat(x, y, can_reorder=True)
    tl.store(Z + tl.arange(0, 2 * N), z)


def test_cat_is_a_permutation() -> None:
    """`can_reorder=True` lets the order change: check the multiset, as upstream does."""
    x, y = _ints((32,), 9), _ints((32,), 10)
    z = np.zeros(64, np.int32)
    run_kernel(_cat, (1,), x, y, z, N=32)
    np.testing.assert_array_equal(np.sort(z), np.sort(np.concatenate([x, y])))


@triton.jit
def _ravel_swizzle(X, R, SW, M: tl.constexpr, N: tl.constexpr, G: tl.constexpr):
    i = tl.arange(0, M)[:, None]
    j = tl.arange(0, N)[None, :]
    x = tl.load(X + i * N + j)
    tl.store(R + tl.arange(0, M * N), tl.ravel(x))
    si, sj = tl.swizzle2d(i, j, M, N, G)
    tl.store(SW + i * N + j, si * N + sj)


def _swizzle_ref(m: int, n: int, g: int) -> np.ndarray:
    out = np.zeros((m, n), np.int32)
    for i in range(m):
        for j in range(n):
            ij = i * n + j
            size_g = g * n
            group = ij // size_g
            off_i = group * g
            gm = min(m - off_i, g)
            out[i, j] = (off_i + (ij % size_g) % gm) * n + (ij % size_g) // gm
    return out


@pytest.mark.parametrize("m, n, g", [(8, 4, 3), (4, 8, 2), (16, 4, 16)])
def test_ravel_and_swizzle2d(m: int, n: int, g: int) -> None:
    x = _ints((m, n), 11)
    r, sw = np.zeros(m * n, np.int32), np.zeros((m, n), np.int32)
    run_kernel(_ravel_swizzle, (1,), x, r, sw, M=m, N=n, G=g)
    np.testing.assert_array_equal(r, x.reshape(-1))
    np.testing.assert_array_equal(sw, _swizzle_ref(m, n, g))


@triton.jit
def _arange_full(Z, F, C, n, START: tl.constexpr, END: tl.constexpr):
    offs = tl.arange(START, END)
    tl.store(Z + tl.arange(0, END - START), offs)
    tl.store(F + tl.arange(0, END - START), tl.full((END - START,), -3, tl.int8))
    tl.store(C + tl.arange(0, END - START), tl.cdiv(offs + n, 7))


@pytest.mark.parametrize("start, end", [(0, 32), (16, 32), (5, 13)])
def test_arange_full_cdiv(start: int, end: int) -> None:
    if (end - start) & (end - start - 1):
        with pytest.raises(triton.CompilationError, match="power of 2"):
            _arange_full[(1,)](torch.zeros(8, dtype=torch.int32), torch.zeros(8, dtype=torch.int8),
                               torch.zeros(8, dtype=torch.int32), 1, START=start, END=end)
        return
    k = end - start
    z, f, c = (torch.zeros(k, dtype=torch.int32), torch.zeros(k, dtype=torch.int8),
               torch.zeros(k, dtype=torch.int32))
    _arange_full[(1,)](z, f, c, 40, START=start, END=end)
    ar = torch.arange(start, end, dtype=torch.int32)
    assert torch.equal(z, ar) and torch.all(f == -3)
    assert torch.equal(c, (ar + 40 + 6) // 7)


@triton.jit
def _where_broadcast(C, X, Z, M: tl.constexpr, N: tl.constexpr):
    c = tl.load(C + tl.arange(0, M))[:, None] != 0  # (M, 1) condition
    x = tl.load(X + tl.arange(0, N))[None, :]  # (1, N) value
    z = tl.where(c, x, -x)  # broadcasts to (M, N)
    tl.store(Z + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], z)


def test_where_broadcast() -> None:
    c = np.array([1, 0, 0, 1, 1, 0, 1, 0], np.int8)
    x = np.linspace(-3, 3, 16, dtype=np.float32)
    z = np.zeros((8, 16), np.float32)
    run_kernel(_where_broadcast, (1,), c, x, z, M=8, N=16)
    np.testing.assert_array_equal(z, np.where(c[:, None] != 0, x[None, :], -x[None, :]))
