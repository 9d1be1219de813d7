"""Kernels whose simulator build once took minutes (issue 38), checked for their results: the
issue's bare 64x64x128 `tl.dot` on 4 warps (fp16 and fp8 e4m3 operands) against float64, a
blockwise-scaled fp8 GEMM of torchao's shape (64x128 tiles of e4m3 operands, one scale per
row and 128-wide K block of A and per 128x128 block of B, 4 warps) against float64, and the
bitonic top-k of msltrans/workloads/topk_kernel.py at 1024 wide against torch.topk. Their build
phases land in the simulator's cache metadata (benchmarks/sim_build_phases.py)."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from msltrans.workloads.topk_kernel import topk_kernel


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    m, n, k = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(a_ptr + m[:, None] * BK + k[None, :])
    b = tl.load(b_ptr + k[:, None] * BN + n[None, :])
    tl.store(c_ptr + m[:, None] * BN + n[None, :], tl.dot(a, b))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float8_e4m3fn])
def test_bare_dot_matches_float64(dtype):
    bm, bn, bk = 64, 64, 128
    gen = torch.Generator().manual_seed(64)
    a = torch.randn(bm, bk, generator=gen).to(dtype)
    b = torch.randn(bk, bn, generator=gen).to(dtype)
    c = torch.empty(bm, bn)
    dot_kernel[(1,)](a, b, c, BM=bm, BN=bn, BK=bk, num_warps=4)
    ref = a.double() @ b.double()
    # Products of fp16 or fp8 values are exact in fp32; each of the k fp32 accumulation steps
    # rounds once (relative 2^-24 of a partial sum, at most the sum of |terms|).
    bound = bk * 2.0**-24 * (a.double().abs() @ b.double().abs())
    assert ((c.double() - ref).abs() <= bound).all()
    assert ref.abs().max().item() > 1


@triton.jit
def blockwise_fp8_gemm(a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, c_ptr, M, N, K,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C = sum over K blocks of (A_blk @ B_blk) * a_scale[m, blk] * b_scale[blk, n // BLOCK_K]."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    k_blocks = K // BLOCK_K
    n_blocks = N // BLOCK_K
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(k_blocks):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        a_s = tl.load(a_scale_ptr + offs_m * k_blocks + i)
        b_s = tl.load(b_scale_ptr + i * n_blocks + offs_n // BLOCK_K)
        acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc)


def test_blockwise_fp8_gemm_matches_float64():
    m, n, k, block = 128, 256, 256, 128
    gen = torch.Generator().manual_seed(38)
    a = (torch.randn(m, k, generator=gen) * 4).to(torch.float8_e4m3fn)
    b = (torch.randn(k, n, generator=gen) * 4).to(torch.float8_e4m3fn)
    a_scale = torch.rand(m, k // block, generator=gen) + 0.5
    b_scale = torch.rand(k // block, n // block, generator=gen) + 0.5
    c = torch.empty(m, n)
    blockwise_fp8_gemm[(m // 64, n // 128)](a, a_scale, b, b_scale, c, m, n, k, BLOCK_M=64,
                                            BLOCK_N=128, BLOCK_K=block, num_warps=4)
    ref = torch.zeros(m, n, dtype=torch.float64)
    for i in range(k // block):
        ks = slice(i * block, (i + 1) * block)
        part = a[:, ks].double() @ b[ks, :].double()
        ref += part * a_scale[:, i].double()[:, None] * b_scale[i].double().repeat_interleave(
            block)[None, :]
    # Each block's fp8 products are exact in float; the float sums round (128 terms, then the
    # scaled sum of two blocks): within a few float ulps of the largest partial sums.
    bound = 1e-5 * (a.double().abs() @ b.double().abs()).max().item() * 2.25
    assert (c.double() - ref).abs().max().item() <= bound


def test_bitonic_topk_1024_matches_torch():
    rows, n, k = 2, 1024, 16
    gen = torch.Generator().manual_seed(1024)
    x = torch.randperm(rows * n, generator=gen).float().reshape(rows, n) / 7 - 100
    values, indices = torch.empty(rows, k), torch.empty(rows, k, dtype=torch.int32)
    topk_kernel[(rows,)](x, values, indices, K=k, N=n, LOG_N=10, num_warps=4)
    ref = torch.topk(x, k, dim=1)
    assert torch.equal(values, ref.values)
    assert torch.equal(indices.long(), ref.indices)
