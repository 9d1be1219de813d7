"""Kernels for tests/e2e/test_dot_fragments.py, written for this project: what a dot result
kept in simdgroup fragments meets after the dot."""

from __future__ import annotations

import triton
import triton.language as tl

from msltrans.workloads.attention_plain import attn_fwd

# Online-softmax attention (one BM block of queries per program, scale includes log2(e),
# ragged n_ctx masked): the GPU proxy's plain attention kernel, one copy for both.
attention_kernel = attn_fwd


@triton.jit
def dot_chain_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, d_ptr, s_ptr, o_ptr, M: tl.constexpr,
                     N: tl.constexpr, K: tl.constexpr, P: tl.constexpr):
    # S = A @ B (fp32 out, stored), then T = (S * 0.5 + bias[col]) rounded to the input type
    # is the A operand of O = T @ C + D: elementwise ops, a row-vector broadcast, a cast, a
    # fragment feeding a dot, a loaded C. No reductions, so every path gives the same bits.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    rp = tl.arange(0, P)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    s = tl.dot(a, b)
    tl.store(s_ptr + rm[:, None] * N + rn[None, :], s)
    bias = tl.load(bias_ptr + rn)
    t = (s * 0.5 + bias[None, :]).to(a.dtype)
    c = tl.load(c_ptr + rn[:, None] * P + rp[None, :])
    d0 = tl.load(d_ptr + rm[:, None] * P + rp[None, :])
    o = tl.dot(t, c, d0)
    tl.store(o_ptr + rm[:, None] * P + rp[None, :], o)


@triton.jit
def _sweep(acc, q, k_ptr, lo, hi, HEAD: tl.constexpr, BN: tl.constexpr):
    d = tl.arange(0, HEAD)
    for start in tl.range(lo, hi, BN):
        keys = start + tl.arange(0, BN)
        kt = tl.load(k_ptr + keys[None, :] * HEAD + d[:, None])
        acc += tl.dot(q, kt) * 0.5
    return acc


@triton.jit
def two_sweeps_kernel(q_ptr, k_ptr, o_ptr, n, HEAD: tl.constexpr, BM: tl.constexpr,
                      BN: tl.constexpr, BETWEEN: tl.constexpr):
    # Two loops over the keys with one Q, like tutorial 06's causal stages: o = Q Kᵀ / 2
    # summed over both halves of the keys. BETWEEN 1: a column max over the rows (threadgroup
    # scratch) between the loops, subtracted; 2: the first loop under an scf.if.
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    d = tl.arange(0, HEAD)
    q = tl.load(q_ptr + rows[:, None] * HEAD + d[None, :])
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    half = n // 2
    if BETWEEN == 2:
        if n > BN:
            acc = _sweep(acc, q, k_ptr, 0, half, HEAD, BN)
    else:
        acc = _sweep(acc, q, k_ptr, 0, half, HEAD, BN)
    if BETWEEN == 1:
        acc -= tl.max(acc, axis=0)[None, :]
    acc = _sweep(acc, q, k_ptr, half, n, HEAD, BN)
    tl.store(o_ptr + rows[:, None] * BN + tl.arange(0, BN)[None, :], acc)
