"""Kernels for tests/e2e/test_dot_fragments.py, written for this project: what a dot result
kept in simdgroup fragments meets after the dot."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx, scale, HEAD: tl.constexpr,
                     BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    # Online-softmax attention over [heads, n_ctx, HEAD] tensors, one BM block of queries
    # per program; scale includes log2(e). Ragged n_ctx: masked keys score -inf, masked
    # queries are computed on zeros and not stored.
    h = tl.program_id(1)
    q0 = tl.program_id(0) * BM
    rows = q0 + tl.arange(0, BM)
    d = tl.arange(0, HEAD)
    base = h * n_ctx * HEAD
    q = tl.load(q_ptr + base + rows[:, None] * HEAD + d[None, :], mask=rows[:, None] < n_ctx,
                other=0.0)
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32)
    acc = tl.zeros([BM, HEAD], dtype=tl.float32)
    hi = tl.minimum(q0 + BM, n_ctx) if CAUSAL else n_ctx
    for start in range(0, hi, BN):
        keys = start + tl.arange(0, BN)
        kt = tl.load(k_ptr + base + keys[None, :] * HEAD + d[:, None],
                     mask=keys[None, :] < n_ctx, other=0.0)
        s = tl.dot(q, kt) * scale
        keep = keys[None, :] < n_ctx
        if CAUSAL:
            keep = keep & (keys[None, :] <= rows[:, None])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + keys[:, None] * HEAD + d[None, :],
                    mask=keys[:, None] < n_ctx, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + rows[:, None] * HEAD + d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=rows[:, None] < n_ctx)


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
