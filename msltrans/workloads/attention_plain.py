"""A plain FlashAttention forward written for msltrans: the online softmax inline, no helper
functions, no tensor descriptors. The GPU proxy times it beside hand-written MSL
(benchmarks/proxy) and the dot-fragment tests lower it (tests/e2e/fragment_kernels.py)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx, scale, HEAD: tl.constexpr,
             BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    # FlashAttention forward, one BM block of queries of one (batch, head) per program, the
    # online softmax written inline (no helper functions, no descriptors). q, k, v, o are
    # [batch*heads, n_ctx, HEAD] contiguous; scale folds 1/sqrt(HEAD) and log2(e).
    bh = tl.program_id(1)
    block = tl.program_id(0)
    if CAUSAL:
        # The longest programs (the last query blocks of every head) first, so the short ones
        # end the dispatch: threadgroups start in grid order (x fastest), so the linear
        # program index counts the heads fastest and the query blocks from the last one.
        heads = tl.num_programs(1)
        linear = tl.program_id(1) * tl.num_programs(0) + tl.program_id(0)
        block = tl.num_programs(0) - 1 - linear // heads
        bh = linear % heads
    q0 = block * BM
    rows = q0 + tl.arange(0, BM)
    d = tl.arange(0, HEAD)
    base = bh.to(tl.int64) * n_ctx * HEAD
    q = tl.load(q_ptr + base + rows[:, None] * HEAD + d[None, :], mask=rows[:, None] < n_ctx,
                other=0.0)
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32)
    acc = tl.zeros([BM, HEAD], dtype=tl.float32)
    hi = tl.minimum(q0 + BM, n_ctx) if CAUSAL else n_ctx
    for start in tl.range(0, hi, BN):
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
    acc = acc / l_i[:, None]
    tl.store(o_ptr + base + rows[:, None] * HEAD + d[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=rows[:, None] < n_ctx)
