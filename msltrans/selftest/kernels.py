"""The self-test's kernels: what Triton's tutorials 01-06 compute (vector add, fused softmax,
matmul, dropout, layer norm, attention), plus reductions, scans, atomics, a volatile spin,
dots and NaN signs, and the probes' kernels (subnormal arithmetic, atomic_ulong max/min, the
fp32 dot whose bits name its order). Written for this project in the tutorials' style, small;
the vector add and the softmax are the workloads' (msltrans/workloads/small_kernels.py)."""

from __future__ import annotations

import triton
import triton.language as tl

from msltrans.workloads.small_kernels import softmax, vector_add  # noqa: F401 - the cases' K.*


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
           stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
           GROUP_M: tl.constexpr, ACC: tl.constexpr, MASKED: tl.constexpr = True):
    pid = tl.program_id(0)
    grid_n = tl.cdiv(N, BN)
    group = GROUP_M * grid_n
    first_m = (pid // group) * GROUP_M
    size_m = min(tl.cdiv(M, BM) - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        a_ptrs = a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak
        b_ptrs = b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn
        if MASKED:
            a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0)
            b = tl.load(b_ptrs, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0)
        else:  # fp8 has no `other` (no int -> fp8 cast): shapes are whole blocks
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def dropout(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


@triton.jit
def layer_norm(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n, eps,
               BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(xc * xc, axis=0) / n + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * stride + cols, xc * rstd * w + b, mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def attention(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, n_ctx, HEAD: tl.constexpr,
              BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    base = tl.program_id(1) * n_ctx * HEAD
    offs_m = start_m * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, HEAD)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD + offs_d[None, :])
    m_i = tl.full([BM], -float("inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, HEAD], tl.float32)
    scale = sm_scale * 1.44269504
    hi = (start_m + 1) * BM if CAUSAL else n_ctx
    for start_n in range(0, hi, BN):
        cols = start_n + offs_n
        k = tl.load(k_ptr + base + cols[None, :] * HEAD + offs_d[:, None])
        qk = tl.dot(q, k) * scale
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= cols[None, :], qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + cols[:, None] * HEAD + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(o_ptr + base + offs_m[:, None] * HEAD + offs_d[None, :],
             (acc / l_i[:, None]).to(o_ptr.dtype.element_ty))


@triton.jit
def row_reductions(x_ptr, sum_ptr, max_ptr, argmax_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    tl.store(sum_ptr + row, tl.sum(tl.where(mask, x, 0.0), axis=0))
    tl.store(max_ptr + row, tl.max(x, axis=0))
    tl.store(argmax_ptr + row, tl.argmax(x, axis=0))


@triton.jit
def row_scans(x_ptr, i_ptr, fsum_ptr, isum_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    i = tl.load(i_ptr + row * n_cols + cols, mask=mask, other=0)
    tl.store(fsum_ptr + row * n_cols + cols, tl.cumsum(x, axis=0), mask=mask)
    tl.store(isum_ptr + row * n_cols + cols, tl.cumsum(i, axis=0), mask=mask)


@triton.jit
def histogram_add(x_ptr, counts_ptr, sums_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = (tl.abs(x) * 4).to(tl.int32) % BINS
    tl.atomic_add(counts_ptr + b, 1, mask=mask, sem="relaxed")
    tl.atomic_add(sums_ptr + b, x, mask=mask, sem="relaxed")


@triton.jit
def locked_counter(lock_ptr, counter_ptr, seen_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    v = tl.load(counter_ptr, volatile=True)
    tl.store(seen_ptr + tl.program_id(0), v)
    tl.store(counter_ptr, v + 1)
    tl.atomic_xchg(lock_ptr, 0)


@triton.jit
def nan_clamp(x_ptr, y_ptr, f_ptr, i_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(x_ptr + offs, mask=mask) * tl.load(y_ptr + offs, mask=mask)  # 0 x inf: NaN
    c = tl.clamp(g, -100.0, 100.0)
    tl.store(f_ptr + offs, c, mask=mask)
    tl.store(i_ptr + offs, c.to(tl.int16).to(tl.int32), mask=mask)


@triton.jit
def math_fns(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    tl.store(out_ptr + offs, tl.exp(x), mask=mask)
    tl.store(out_ptr + n + offs, tl.log(tl.abs(x) + 1.0), mask=mask)
    tl.store(out_ptr + 2 * n + offs, tl.sin(x), mask=mask)
    tl.store(out_ptr + 3 * n + offs, tl.sqrt_rn(tl.abs(x)), mask=mask)


@triton.jit
def subnormal_ops(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * y, mask=mask)
    tl.store(out_ptr + n + offs, x + y, mask=mask)


@triton.jit
def ulong_minmax(x_ptr, max_ptr, min_ptr, n, SLOTS: tl.constexpr, BLOCK: tl.constexpr):
    # int64 tensors (MPS has few uint64 ops) read as uint64: atomic_ulong's max/min
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.uint64, bitcast=True)
    slot = offs % SLOTS
    tl.atomic_max(max_ptr.to(tl.pointer_type(tl.uint64)) + slot, x, mask=mask, sem="relaxed")
    tl.atomic_min(min_ptr.to(tl.pointer_type(tl.uint64)) + slot, x, mask=mask, sem="relaxed")


@triton.jit
def dot_probe(a_ptr, b_ptr, c_ptr, out_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    idx = r[:, None] * N + r[None, :]
    acc = tl.dot(tl.load(a_ptr + idx), tl.load(b_ptr + idx), tl.load(c_ptr + idx),
                 input_precision="ieee")
    tl.store(out_ptr + idx, acc)
