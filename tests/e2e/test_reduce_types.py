"""Element types numpy cannot hand the helper directly: bf16 (as uint16 bits) and i1."""

from __future__ import annotations

import numpy as np
import torch
import triton
import triton.language as tl

from tests.support.combine import bit_and, bit_or
from tests.support.reduce_ref import assert_float_same
from tests.support.run_kernel import run_kernel


@triton.jit
def bf16_kernel(x_ptr, max_ptr, sum_ptr, scan_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs).to(tl.bfloat16, bitcast=True)
    rm = tl.arange(0, M)
    m = tl.reduce(x, 1, _max_bf16)
    tl.store(max_ptr + rm, m.to(tl.uint16, bitcast=True))
    s = tl.sum(x, axis=1)
    tl.store(sum_ptr + rm, s.to(tl.uint16, bitcast=True))
    c = tl.cumsum(x, axis=0)
    tl.store(scan_ptr + offs, c.to(tl.uint16, bitcast=True))


@triton.jit
def _max_bf16(a, b):
    return tl.maximum(a, b)


def _bf16_bits(t: torch.Tensor) -> np.ndarray:
    return t.view(torch.int16).numpy().view(np.uint16)


def test_bf16_reduce_and_scan() -> None:
    M, N = 8, 64
    g = torch.Generator().manual_seed(12)
    xt = (torch.randint(-6, 7, (M, N), generator=g) * 0.25).to(torch.bfloat16)  # exact sums
    xt[2, 5] = float("nan")
    x = _bf16_bits(xt).copy()
    mx, sm = np.zeros(M, np.uint16), np.zeros(M, np.uint16)
    sc = np.zeros((M, N), np.uint16)
    run_kernel(bf16_kernel, (1,), x, mx, sm, sc, num_warps=4, M=M, N=N)
    xf = xt.float()
    ref_max = torch.where(torch.isnan(xf), -torch.inf, xf).amax(dim=1).to(torch.bfloat16)
    got_max = torch.from_numpy(mx.view(np.int16)).view(torch.bfloat16)
    assert_float_same(got_max.float().numpy(), ref_max.float().numpy())
    clean = torch.where(torch.isnan(xf), 0.0, xf)
    got_sum = torch.from_numpy(sm.view(np.int16)).view(torch.bfloat16).float().numpy()
    ref_sum = clean.sum(dim=1).numpy()
    ref_sum[2] = np.nan
    assert_float_same(got_sum, ref_sum)  # small multiples of 1/4: every order is exact
    got_scan = torch.from_numpy(sc.view(np.int16)).view(torch.bfloat16).float().numpy()
    ref_scan = np.cumsum(xf.numpy(), axis=0)
    assert_float_same(got_scan, ref_scan)


@triton.jit
def bool_kernel(x_ptr, any_ptr, all_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    b = tl.load(x_ptr + offs) > 0
    tl.store(any_ptr + tl.arange(0, N), tl.reduce(b, 0, bit_or).to(tl.int32))
    tl.store(all_ptr + tl.arange(0, M), tl.reduce(b, 1, bit_and).to(tl.int32))


def test_bool_reduce() -> None:
    M, N = 32, 32
    x = (np.random.default_rng(13).random((M, N)) < 0.9).astype(np.int32)
    x[:, 3] = 0
    x[7, :] = 1
    a, al = np.zeros(N, np.int32), np.zeros(M, np.int32)
    run_kernel(bool_kernel, (1,), x, a, al, num_warps=8, M=M, N=N)
    np.testing.assert_array_equal(a, (x > 0).any(axis=0))
    np.testing.assert_array_equal(al, (x > 0).all(axis=1))


@triton.jit
def rank3_kernel(x_ptr, r_ptr, s_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    ra = tl.arange(0, A)[:, None, None]
    rb = tl.arange(0, B)[None, :, None]
    rc = tl.arange(0, C)[None, None, :]
    offs = ra * B * C + rb * C + rc
    x = tl.load(x_ptr + offs)
    r_offs = tl.arange(0, A)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(r_ptr + r_offs, tl.max(x, axis=1))
    tl.store(s_ptr + offs, tl.cumsum(x, axis=1, reverse=True))


def test_rank3_reduce_and_scan() -> None:
    A, B, C = 4, 16, 8
    x = np.random.default_rng(14).integers(-2**31, 2**31, (A, B, C), dtype=np.int64)
    x = x.astype(np.int32)
    r, s = np.zeros((A, C), np.int32), np.zeros_like(x)
    run_kernel(rank3_kernel, (1,), x, r, s, num_warps=4, A=A, B=B, C=C)
    np.testing.assert_array_equal(r, x.max(axis=1))
    ref = np.flip(np.cumsum(np.flip(x.astype(np.int64), 1), axis=1), 1)
    np.testing.assert_array_equal(s, ref.astype(np.uint32).astype(np.int32))
