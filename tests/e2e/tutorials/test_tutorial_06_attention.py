# ruff: noqa: E741, E501, B007 - the tutorial's kernels are kept verbatim
"""Triton tutorial 06 (fused attention, Flash Attention v2) through the Metal driver.

The kernels `_attn_fwd_inner`, `_maybe_make_tensor_desc`, `_attn_fwd`, `_attn_bwd_preprocess`,
`_attn_bwd_dkdv`, `_attn_bwd_dq` and `_attn_bwd` are copied verbatim from
`python/tutorials/06-fused-attention.py` of intel/intel-xpu-backend-for-triton at commit
6c1649935d (the tree DEVELOPERS.md checks out as <triton-src>). Dropped: the
`@triton.autotune(...)` decorator on `_attn_fwd` (its configs are CUDA block sizes; the tests
pass BLOCK_M / BLOCK_N / num_warps as one config would) and the `torch.autograd.Function`
wrapper; `attn_forward` / `attn_backward` below launch the kernels the way its
`forward` / `backward` do on a target without host tensor descriptors (plain tensors as
`desc_*`; the kernel builds device descriptors with `tl.make_tensor_descriptor`, which the
pipeline rewrites to pointers, so no global scratch allocator is needed).

Reference: float64 torch, `softmax(Q Kᵀ · sm_scale) V` (causal: `-inf` above the diagonal) and
its autograd gradients. Error bounds (fp16 inputs, stated per test):
- forward output: the kernel rounds P to fp16 before `P·V` (relative 2⁻¹¹ per term, so at most
  2⁻¹¹·max|V| after normalisation) and the output to fp16 (2⁻¹¹·max|O|): we assert
  |O − O_ref| ≤ 2⁻¹¹·(max|V| + max|O_ref|) + 1e-4 (the 1e-4 covers fp32 exp2/accumulation);
- the row statistic M (log2-sum-exp2 of the scaled scores) to 2e-6·(1 + |M|) (fp32 exp2/log2);
- backward dQ, dK, dV: dS and P are rounded to fp16 before each dot; asserted within the
  tutorial's own tolerance, atol 1e-2, against float64 (tighter than the tutorial, whose
  reference is itself fp16).
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.driver import driver

from msltrans.errors import MetalNonRecoverableError

RCP_LN2 = 1.4426950408889634


@pytest.fixture(autouse=True)
def sim_driver():
    active = driver.active
    if type(active).__name__ != "MetalDriver" or active.engine_name != "sim":
        pytest.skip("needs the Metal driver on the simulator engine")
    return active


# ---- verbatim from the tutorial (autotune decorator dropped) -----------------------------


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q,  #
                    desc_k, desc_v,  #
                    offset_y, dtype: tl.constexpr, start_m, qk_scale,  #
                    BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr,  #
                    STAGE: tl.constexpr, offs_m: tl.constexpr, offs_n: tl.constexpr,  #
                    N_CTX: tl.constexpr, warp_specialize: tl.constexpr, IS_HOPPER: tl.constexpr):
    # range of values handled by this stage
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    # causal = False
    else:
        lo, hi = 0, N_CTX
    offsetk_y = offset_y + lo
    if dtype == tl.float8e5:
        offsetv_y = offset_y * HEAD_DIM + lo
    else:
        offsetv_y = offset_y + lo
    # loop over k, v and update accumulator
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=warp_specialize):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        # -- compute qk ----
        k = desc_k.load([offsetk_y, 0]).T
        qk = tl.dot(q, k)
        if STAGE == 2:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(mask, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        # -- compute correction factor
        alpha = tl.math.exp2(m_i - m_ij)
        l_ij = tl.sum(p, 1)
        # -- update output accumulator --
        if not IS_HOPPER and warp_specialize and BLOCK_M == 128 and HEAD_DIM == 128:
            BM: tl.constexpr = acc.shape[0]
            BN: tl.constexpr = acc.shape[1]
            acc0, acc1 = acc.reshape([BM, 2, BN // 2]).permute(0, 2, 1).split()
            acc0 = acc0 * alpha[:, None]
            acc1 = acc1 * alpha[:, None]
            acc = tl.join(acc0, acc1).permute(0, 2, 1).reshape([BM, BN])
        else:
            acc = acc * alpha[:, None]
        # prepare p and v for the dot
        if dtype == tl.float8e5:
            v = desc_v.load([0, offsetv_y]).T
        else:
            v = desc_v.load([offsetv_y, 0])
        p = p.to(dtype)
        # note that this non transposed v for FP8 is only supported on Blackwell
        acc = tl.dot(p, v, acc)
        # update m_i and l_i
        # place this at the end of the loop to reduce register pressure
        l_i = l_i * alpha + l_ij
        m_i = m_ij
        offsetk_y += BLOCK_N
        offsetv_y += BLOCK_N
    return acc, l_i, m_i


@triton.jit
def _maybe_make_tensor_desc(desc_or_ptr, shape, strides, block_shape):
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    else:
        return tl.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@triton.jit
def _attn_fwd(sm_scale, M,  #
              Z, H, desc_q, desc_k, desc_v, desc_o, N_CTX,  #
              HEAD_DIM: tl.constexpr,  #
              BLOCK_M: tl.constexpr,  #
              BLOCK_N: tl.constexpr,  #
              FP8_OUTPUT: tl.constexpr,  #
              STAGE: tl.constexpr,  #
              warp_specialize: tl.constexpr,  #
              IS_HOPPER: tl.constexpr,  #
              ):
    dtype = tl.float8e5 if FP8_OUTPUT else tl.float16
    tl.static_assert(BLOCK_N <= HEAD_DIM)
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H

    y_dim = Z * H * N_CTX
    desc_q = _maybe_make_tensor_desc(desc_q, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                     block_shape=[BLOCK_M, HEAD_DIM])
    if FP8_OUTPUT:
        desc_v = _maybe_make_tensor_desc(desc_v, shape=[HEAD_DIM, y_dim], strides=[N_CTX, 1],
                                         block_shape=[HEAD_DIM, BLOCK_N])
    else:
        desc_v = _maybe_make_tensor_desc(desc_v, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                         block_shape=[BLOCK_N, HEAD_DIM])
    desc_k = _maybe_make_tensor_desc(desc_k, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                     block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = _maybe_make_tensor_desc(desc_o, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                     block_shape=[BLOCK_M, HEAD_DIM])

    offset_y = off_z * (N_CTX * H) + off_h * N_CTX
    qo_offset_y = offset_y + start_m * BLOCK_M
    # initialize offsets
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    # initialize pointer to m and l
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    # load scales
    qk_scale = sm_scale
    qk_scale *= 1.44269504  # 1/log(2)
    # load q: it will stay in SRAM throughout
    q = desc_q.load([qo_offset_y, 0])
    # stage 1: off-band
    # For causal = True, STAGE = 3 and _attn_fwd_inner gets 1 as its STAGE
    # For causal = False, STAGE = 1, and _attn_fwd_inner gets 3 as its STAGE
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q,  #
                                        desc_k, desc_v,  #
                                        offset_y, dtype, start_m, qk_scale,  #
                                        BLOCK_M, HEAD_DIM, BLOCK_N,  #
                                        4 - STAGE, offs_m, offs_n, N_CTX,  #
                                        warp_specialize, IS_HOPPER)
    # stage 2: on-band
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q,  #
                                        desc_k, desc_v,  #
                                        offset_y, dtype, start_m, qk_scale,  #
                                        BLOCK_M, HEAD_DIM, BLOCK_N,  #
                                        2, offs_m, offs_n, N_CTX,  #
                                        warp_specialize, IS_HOPPER)
    # epilogue
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    m_ptrs = M + off_hz * N_CTX + offs_m
    tl.store(m_ptrs, m_i)
    desc_o.store([qo_offset_y, 0], acc.to(dtype))


@triton.jit
def _attn_bwd_preprocess(O, DO,  #
                         Delta,  #
                         Z, H, N_CTX,  #
                         BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr  #
                         ):
    off_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    off_hz = tl.program_id(1)
    off_n = tl.arange(0, HEAD_DIM)
    # load
    o = tl.load(O + off_hz * HEAD_DIM * N_CTX + off_m[:, None] * HEAD_DIM + off_n[None, :])
    do = tl.load(DO + off_hz * HEAD_DIM * N_CTX + off_m[:, None] * HEAD_DIM + off_n[None, :]).to(tl.float32)
    delta = tl.sum(o * do, axis=1)
    # write-back
    tl.store(Delta + off_hz * N_CTX + off_m, delta)


# The main inner-loop logic for computing dK and dV.
@triton.jit
def _attn_bwd_dkdv(dk, dv,  #
                   Q, k, v, sm_scale,  #
                   DO,  #
                   M, D,  #
                   # shared by Q/K/V/DO.
                   stride_tok, stride_d,  #
                   H, N_CTX, BLOCK_M1: tl.constexpr,  #
                   BLOCK_N1: tl.constexpr,  #
                   HEAD_DIM: tl.constexpr,  #
                   # Filled in by the wrapper.
                   start_n, start_m, num_steps,  #
                   MASK: tl.constexpr):
    offs_m = start_m + tl.arange(0, BLOCK_M1)
    offs_n = start_n + tl.arange(0, BLOCK_N1)
    offs_k = tl.arange(0, HEAD_DIM)
    qT_ptrs = Q + offs_m[None, :] * stride_tok + offs_k[:, None] * stride_d
    do_ptrs = DO + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d
    # BLOCK_N1 must be a multiple of BLOCK_M1, otherwise the code wouldn't work.
    tl.static_assert(BLOCK_N1 % BLOCK_M1 == 0)
    curr_m = start_m
    step_m = BLOCK_M1
    for blk_idx in range(num_steps):
        qT = tl.load(qT_ptrs)
        # Load m before computing qk to reduce pipeline stall.
        offs_m = curr_m + tl.arange(0, BLOCK_M1)
        m = tl.load(M + offs_m)
        qkT = tl.dot(k, qT)
        pT = tl.math.exp2(qkT - m[None, :])
        # Autoregressive masking.
        if MASK:
            mask = (offs_m[None, :] >= offs_n[:, None])
            pT = tl.where(mask, pT, 0.0)
        do = tl.load(do_ptrs)
        # Compute dV.
        ppT = pT
        ppT = ppT.to(tl.float16)
        dv += tl.dot(ppT, do)
        # D (= delta) is pre-divided by ds_scale.
        Di = tl.load(D + offs_m)
        # Compute dP and dS.
        dpT = tl.dot(v, tl.trans(do)).to(tl.float32)
        dsT = pT * (dpT - Di[None, :])
        dsT = dsT.to(tl.float16)
        dk += tl.dot(dsT, tl.trans(qT))
        # Increment pointers.
        curr_m += step_m
        qT_ptrs += step_m * stride_tok
        do_ptrs += step_m * stride_tok
    return dk, dv


# the main inner-loop logic for computing dQ
@triton.jit
def _attn_bwd_dq(dq, q, K, V,  #
                 do, m, D,
                 # shared by Q/K/V/DO.
                 stride_tok, stride_d,  #
                 H, N_CTX,  #
                 BLOCK_M2: tl.constexpr,  #
                 BLOCK_N2: tl.constexpr,  #
                 HEAD_DIM: tl.constexpr,
                 # Filled in by the wrapper.
                 start_m, start_n, num_steps,  #
                 MASK: tl.constexpr):
    offs_m = start_m + tl.arange(0, BLOCK_M2)
    offs_n = start_n + tl.arange(0, BLOCK_N2)
    offs_k = tl.arange(0, HEAD_DIM)
    kT_ptrs = K + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    vT_ptrs = V + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    # D (= delta) is pre-divided by ds_scale.
    Di = tl.load(D + offs_m)
    # BLOCK_M2 must be a multiple of BLOCK_N2, otherwise the code wouldn't work.
    tl.static_assert(BLOCK_M2 % BLOCK_N2 == 0)
    curr_n = start_n
    step_n = BLOCK_N2
    for blk_idx in range(num_steps):
        kT = tl.load(kT_ptrs)
        vT = tl.load(vT_ptrs)
        qk = tl.dot(q, kT)
        p = tl.math.exp2(qk - m)
        # Autoregressive masking.
        if MASK:
            offs_n = curr_n + tl.arange(0, BLOCK_N2)
            mask = (offs_m[:, None] >= offs_n[None, :])
            p = tl.where(mask, p, 0.0)
        # Compute dP and dS.
        dp = tl.dot(do, vT).to(tl.float32)
        ds = p * (dp - Di[:, None])
        ds = ds.to(tl.float16)
        # Compute dQ.
        # NOTE: We need to de-scale dq in the end, because kT was pre-scaled.
        dq += tl.dot(ds, tl.trans(kT))
        # Increment pointers.
        curr_n += step_n
        kT_ptrs += step_n * stride_tok
        vT_ptrs += step_n * stride_tok
    return dq


@triton.jit
def _attn_bwd(Q, K, V, sm_scale,  #
              DO,  #
              DQ, DK, DV,  #
              M, D,
              # shared by Q/K/V/DO.
              stride_z, stride_h, stride_tok, stride_d,  #
              H, N_CTX,  #
              BLOCK_M1: tl.constexpr,  #
              BLOCK_N1: tl.constexpr,  #
              BLOCK_M2: tl.constexpr,  #
              BLOCK_N2: tl.constexpr,  #
              BLK_SLICE_FACTOR: tl.constexpr,  #
              HEAD_DIM: tl.constexpr,  #
              CAUSAL: tl.constexpr):
    LN2: tl.constexpr = 0.6931471824645996  # = ln(2)

    bhid = tl.program_id(2)
    off_chz = (bhid * N_CTX).to(tl.int64)
    adj = (stride_h * (bhid % H) + stride_z * (bhid // H)).to(tl.int64)
    pid = tl.program_id(0)

    # offset pointers for batch/head
    Q += adj
    K += adj
    V += adj
    DO += adj
    DQ += adj
    DK += adj
    DV += adj
    M += off_chz
    D += off_chz

    # load scales
    offs_k = tl.arange(0, HEAD_DIM)

    start_n = pid * BLOCK_N1
    start_m = 0

    MASK_BLOCK_M1: tl.constexpr = BLOCK_M1 // BLK_SLICE_FACTOR
    offs_n = start_n + tl.arange(0, BLOCK_N1)

    dv = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    dk = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)

    # load K and V: they stay in SRAM throughout the inner loop.
    k = tl.load(K + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)
    v = tl.load(V + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)

    if CAUSAL:
        start_m = start_n
        num_steps = BLOCK_N1 // MASK_BLOCK_M1
        dk, dv = _attn_bwd_dkdv(dk, dv,  #
                                Q, k, v, sm_scale,  #
                                DO,  #
                                M, D,  #
                                stride_tok, stride_d,  #
                                H, N_CTX,  #
                                MASK_BLOCK_M1, BLOCK_N1, HEAD_DIM,  #
                                start_n, start_m, num_steps,  #
                                MASK=True,  #
                                )

        start_m += num_steps * MASK_BLOCK_M1

    # Compute dK and dV for non-masked blocks.
    num_steps = (N_CTX - start_m) // BLOCK_M1
    dk, dv = _attn_bwd_dkdv(  #
        dk, dv,  #
        Q, k, v, sm_scale,  #
        DO,  #
        M, D,  #
        stride_tok, stride_d,  #
        H, N_CTX,  #
        BLOCK_M1, BLOCK_N1, HEAD_DIM,  #
        start_n, start_m, num_steps,  #
        MASK=False,  #
    )

    dv_ptrs = DV + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d
    tl.store(dv_ptrs, dv)

    # Write back dK.
    dk *= sm_scale
    dk_ptrs = DK + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d
    tl.store(dk_ptrs, dk)

    # THIS BLOCK DOES DQ:
    start_m = pid * BLOCK_M2
    start_n = 0
    num_steps = N_CTX // BLOCK_N2

    MASK_BLOCK_N2: tl.constexpr = BLOCK_N2 // BLK_SLICE_FACTOR
    offs_m = start_m + tl.arange(0, BLOCK_M2)

    q = tl.load(Q + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d)
    dq = tl.zeros([BLOCK_M2, HEAD_DIM], dtype=tl.float32)
    do = tl.load(DO + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d)

    m = tl.load(M + offs_m)
    m = m[:, None]

    if CAUSAL:
        # Compute dQ for masked (diagonal) blocks.
        # NOTE: This code scans each row of QK^T backward (from right to left,
        # but inside each call to _attn_bwd_dq, from left to right), but that's
        # not due to anything important.  I just wanted to reuse the loop
        # structure for dK & dV above as much as possible.
        end_n = start_m + BLOCK_M2
        num_steps = BLOCK_M2 // MASK_BLOCK_N2
        dq = _attn_bwd_dq(dq, q, K, V,  #
                          do, m, D,  #
                          stride_tok, stride_d,  #
                          H, N_CTX,  #
                          BLOCK_M2, MASK_BLOCK_N2, HEAD_DIM,  #
                          start_m, end_n - num_steps * MASK_BLOCK_N2, num_steps,  #
                          MASK=True,  #
                          )
        end_n -= num_steps * MASK_BLOCK_N2
        # stage 2
        num_steps = end_n // BLOCK_N2
        start_n = end_n - num_steps * BLOCK_N2

    dq = _attn_bwd_dq(dq, q, K, V,  #
                      do, m, D,  #
                      stride_tok, stride_d,  #
                      H, N_CTX,  #
                      BLOCK_M2, BLOCK_N2, HEAD_DIM,  #
                      start_m, start_n, num_steps,  #
                      MASK=False,  #
                      )
    # Write back dQ.
    dq_ptrs = DQ + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d
    dq *= LN2
    tl.store(dq_ptrs, dq)


# ---- host side: the tutorial's `_attention.forward` / `.backward` launches ---------------


def attn_forward(q, k, v, causal, sm_scale, BLOCK_M=128, BLOCK_N=64, num_warps=4):
    Z, H, N_CTX, HEAD_DIM = q.shape
    o = torch.empty_like(q)
    M = torch.empty((Z, H, N_CTX), dtype=torch.float32)
    grid = (triton.cdiv(N_CTX, BLOCK_M), Z * H, 1)
    _attn_fwd[grid](sm_scale, M, Z, H, q, k, v, o, N_CTX=N_CTX, HEAD_DIM=HEAD_DIM,
                    BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, FP8_OUTPUT=q.dtype == torch.float8_e5m2,
                    STAGE=3 if causal else 1, warp_specialize=False, IS_HOPPER=False,
                    num_warps=num_warps)
    return o, M


def attn_backward(q, k, v, o, M, do, causal, sm_scale):
    """The tutorial's backward, its block sizes included (N_CTX must be a multiple of 128)."""
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    BATCH, N_HEAD, N_CTX, HEAD_DIM = q.shape
    PRE_BLOCK, NUM_WARPS = 128, 4
    BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2 = 32, 128, 128, 32
    arg_k = k * (sm_scale * RCP_LN2)
    delta = torch.empty_like(M)
    _attn_bwd_preprocess[(N_CTX // PRE_BLOCK, BATCH * N_HEAD)](
        o, do, delta, BATCH, N_HEAD, N_CTX, BLOCK_M=PRE_BLOCK, HEAD_DIM=HEAD_DIM)
    _attn_bwd[(N_CTX // BLOCK_N1, 1, BATCH * N_HEAD)](
        q, arg_k, v, sm_scale, do, dq, dk, dv, M, delta,
        q.stride(0), q.stride(1), q.stride(2), q.stride(3), N_HEAD, N_CTX,
        BLOCK_M1=BLOCK_M1, BLOCK_N1=BLOCK_N1, BLOCK_M2=BLOCK_M2, BLOCK_N2=BLOCK_N2,
        BLK_SLICE_FACTOR=2, HEAD_DIM=HEAD_DIM, num_warps=NUM_WARPS, CAUSAL=causal)
    return dq, dk, dv


# ---- float64 reference --------------------------------------------------------------------


def reference(q, k, v, causal, sm_scale):
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    s = q64 @ k64.transpose(-1, -2) * sm_scale
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), float("-inf"))
    o = torch.softmax(s, dim=-1) @ v64
    # M = log2(sum 2^(s * 1.44269504)): the kernel's qk_scale is sm_scale * 1.44269504
    m = torch.logsumexp(s.detach() * (1.44269504 / RCP_LN2), dim=-1) * RCP_LN2
    return o, m, (q64, k64, v64)


def inputs(Z, H, N_CTX, HEAD_DIM, std=0.5, seed=20):
    gen = torch.Generator().manual_seed(seed)
    return [torch.empty((Z, H, N_CTX, HEAD_DIM), dtype=torch.float16).normal_(0.0, std,
                                                                             generator=gen)
            for _ in range(3)]


def forward_bound(v: torch.Tensor, o_ref: torch.Tensor) -> float:
    return 2.0**-11 * (v.abs().max().item() + o_ref.abs().max().item()) + 1e-4


# ---- tests -------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("Z, H, N_CTX, HEAD_DIM, BLOCK_M, BLOCK_N, num_warps, std", [
    (1, 2, 64, 16, 32, 16, 4, 0.5),
    (2, 3, 128, 64, 128, 64, 4, 0.5),  # the tutorial's pytest config (BLOCK_M=128, BLOCK_N=64)
    (1, 1, 256, 32, 64, 32, 8, 2.0),  # large scores: the online max/rescale must hold up
])
def test_forward_matches_float64(Z, H, N_CTX, HEAD_DIM, BLOCK_M, BLOCK_N, num_warps, std, causal):
    q, k, v = inputs(Z, H, N_CTX, HEAD_DIM, std)
    sm_scale = 0.5
    o, M = attn_forward(q, k, v, causal, sm_scale, BLOCK_M, BLOCK_N, num_warps)
    o_ref, m_ref, _ = reference(q, k, v, causal, sm_scale)
    assert o.dtype == torch.float16 and torch.isfinite(o).all()
    err = (o.double() - o_ref.detach()).abs().max().item()
    assert err <= forward_bound(v, o_ref), err
    m_err = ((M.double() - m_ref) / (1 + m_ref.abs())).abs().max().item()
    assert m_err <= 2e-6, m_err


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("Z, H, HEAD_DIM", [(1, 2, 32), (2, 1, 64)])
def test_backward_matches_float64_autograd(Z, H, HEAD_DIM, causal):
    N_CTX, sm_scale = 128, 0.5
    q, k, v = inputs(Z, H, N_CTX, HEAD_DIM)
    do = torch.empty_like(q).normal_(0.0, 1.0, generator=torch.Generator().manual_seed(7))
    o, M = attn_forward(q, k, v, causal, sm_scale, 64, min(64, HEAD_DIM))
    dq, dk, dv = attn_backward(q, k, v, o, M, do, causal, sm_scale)
    o_ref, _, (q64, k64, v64) = reference(q, k, v, causal, sm_scale)
    o_ref.backward(do.double())
    assert (o.double() - o_ref.detach()).abs().max().item() <= forward_bound(v, o_ref)
    for name, got, ref in (("dq", dq, q64.grad), ("dk", dk, k64.grad), ("dv", dv, v64.grad)):
        assert got.dtype == torch.float16
        err = (got.double() - ref).abs().max().item()
        assert err <= 1e-2, (name, err)
        # and not vacuously: the gradients are far from zero
        assert ref.abs().max().item() > 0.1


def test_causal_differs_from_non_causal():
    # guards the reference comparison: the two stages really take different paths
    q, k, v = inputs(1, 1, 64, 16)
    a, _ = attn_forward(q, k, v, False, 0.5, 32, 16)
    b, _ = attn_forward(q, k, v, True, 0.5, 32, 16)
    assert (a.double() - b.double()).abs().max().item() > 0.05
    # the first query row attends only to key 0 when causal: O[0] == V[0] (to fp16)
    assert torch.equal(b[0, 0, 0], v[0, 0, 0])


def test_fp8_path_is_refused_or_correct():
    """FP8_OUTPUT (e5m2 Q/K/V, V transposed): fp8 tensors have no Metal type today, so the
    launch must refuse with a MetalNonRecoverableError naming the type; should fp8 storage
    land, the output must then be right to fp8 precision (e5m2: 2 mantissa bits)."""
    Z, H, N_CTX, HEAD_DIM = 1, 1, 64, 16
    q, k, v = inputs(Z, H, N_CTX, HEAD_DIM)
    q8, k8 = q.to(torch.float8_e5m2), k.to(torch.float8_e5m2)
    v8 = v.permute(0, 1, 3, 2).contiguous().permute(0, 1, 3, 2).to(torch.float8_e5m2)
    try:
        o, _ = attn_forward(q8, k8, v8, False, 0.5, 32, 16)
    except Exception as exc:  # noqa: BLE001 - a CompilationError wraps the refusal
        cause = exc if isinstance(exc, MetalNonRecoverableError) else exc.__cause__
        assert isinstance(cause, MetalNonRecoverableError), repr(exc)
        assert "f8E5M2" in str(cause) and "Metal" in str(cause)
        return
    o_ref, _, _ = reference(q8.float(), k8.float(), v8.float(), False, 0.5)
    err = (o.double() - o_ref.detach()).abs().max().item()
    assert err <= 2.0**-2 * (v8.float().abs().max().item() + o_ref.abs().max().item()), err
