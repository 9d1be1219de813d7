"""@triton.jit kernels for the tt.dot tests (one place, imported by tests/e2e/test_dot*.py)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def dot_acc_kernel(a_ptr, b_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr,
                   K: tl.constexpr):
    """out = a @ b + c for one [M, K] x [K, N] block, all row-major."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, c))


@triton.jit
def dot_strided_kernel(a_ptr, b_ptr, out_ptr, sam, sak, sbk, sbn, M: tl.constexpr,
                       N: tl.constexpr, K: tl.constexpr, OUT_F16: tl.constexpr):
    """out = a @ b with A and B read through runtime strides (transposed / column-major)."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * sam + rk[None, :] * sak)
    b = tl.load(b_ptr + rk[:, None] * sbk + rn[None, :] * sbn)
    if OUT_F16:
        d = tl.dot(a, b, out_dtype=tl.float16)
    else:
        d = tl.dot(a, b)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], d)


@triton.jit
def matmul_f32_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                      stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                      BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr):
    """Tutorial 03's matmul_kernel storing the fp32 accumulator itself (so every bit of the
    K-loop fma chain is checked, not just its fp16 rounding); also the cross-vendor kernel."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        # ieee spelled out: it is msltrans's default, but Triton's CUDA backend defaults to
        # tf32 (scripts/cuda_reference/dot_reference.py runs this kernel there).
        accumulator = tl.dot(a, b, accumulator, input_precision="ieee")
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, accumulator, mask=c_mask)


@triton.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, out_ptr, B: tl.constexpr, M: tl.constexpr,
                       N: tl.constexpr, K: tl.constexpr):
    """out[b] = a[b] @ b[b] + c[b] with one 3-D tl.dot (row-major [B, M, K] x [B, K, N])."""
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rka = tl.arange(0, K)[None, None, :]
    rkb = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + rb * M * K + rm * K + rka)
    b = tl.load(b_ptr + rb * K * N + rkb * N + rn)
    c = tl.load(c_ptr + rb * M * N + rm * N + rn)
    tl.store(out_ptr + rb * M * N + rm * N + rn, tl.dot(a, b, c))


@triton.jit
def chained_dot_kernel(q_ptr, k_ptr, v_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr,
                       D: tl.constexpr):
    """Attention's shape of work without the softmax: out = (q @ k^T) @ v, the first dot's
    result feeding the second as its A operand (k^T through tl.trans)."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    kt = tl.trans(tl.load(k_ptr + rn[:, None] * D + rd[None, :]))
    v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
    s = tl.dot(q, kt)
    tl.store(out_ptr + rm[:, None] * D + rd[None, :], tl.dot(s.to(v.dtype), v))



@triton.jit
def attention_like_kernel(q_ptr, k_ptr, v_ptr, out_ptr, n_kv, scale, M: tl.constexpr,
                          BLOCK_N: tl.constexpr, D: tl.constexpr):
    """FlashAttention's loop without the softmax: per KV block, s = q @ k^T, p = s * scale,
    acc = p @ v + acc — two chained dots in the loop, the first's result feeding the second."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    acc = tl.zeros((M, D), dtype=tl.float32)
    for start in range(0, n_kv, BLOCK_N):
        kv = (start + rn)[:, None] * D + rd[None, :]
        k = tl.load(k_ptr + kv)
        v = tl.load(v_ptr + kv)
        p = tl.dot(q, tl.trans(k)) * scale
        acc = tl.dot(p.to(v.dtype), v, acc)
    tl.store(out_ptr + rm[:, None] * D + rd[None, :], acc)


@triton.jit
def k_loop_variant_kernel(a_ptr, b_ptr, c_ptr, out_ptr, aux_ptr, K, M: tl.constexpr,
                          N: tl.constexpr, BK: tl.constexpr, MODE: tl.constexpr):
    """A K loop over row-major A [M, K] and B [K, N] (K a multiple of BK, 0 allowed) in the
    variants the resident-accumulator pattern must take or leave (ops_dot_resident.py):
    "plain" acc = dot(a, b, acc) from zeros; "init" the same from C loaded from c_ptr;
    "scaled" acc = dot(a, b, acc) * 2; "read" total += acc before each dot (aux = total);
    "f16acc" an fp16 accumulator (out_dtype=float16, rounded at the end of every dot)."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BK)
    if MODE == "init":
        acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    elif MODE == "f16acc":
        acc = tl.zeros((M, N), dtype=tl.float16)
    else:
        acc = tl.zeros((M, N), dtype=tl.float32)
    total = tl.zeros((M, N), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :])
        if MODE == "scaled":
            acc = tl.dot(a, b, acc) * 2.0
        elif MODE == "read":
            total += acc
            acc = tl.dot(a, b, acc)
        elif MODE == "f16acc":
            acc = tl.dot(a, b, acc, out_dtype=tl.float16)
        else:
            acc = tl.dot(a, b, acc)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc)
    if MODE == "read":
        tl.store(aux_ptr + rm[:, None] * N + rn[None, :], total)


@triton.jit
def batched_k_loop_kernel(a_ptr, b_ptr, out_ptr, K, B: tl.constexpr, M: tl.constexpr,
                          N: tl.constexpr, BK: tl.constexpr):
    """out[b] = a[b] @ b[b] through a K loop of 3-D tl.dots (row-major [B, M, K] x [B, K, N])."""
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rka = tl.arange(0, BK)[None, None, :]
    rkb = tl.arange(0, BK)[None, :, None]
    acc = tl.zeros((B, M, N), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rb * M * K + rm * K + k0 + rka)
        b = tl.load(b_ptr + rb * K * N + (k0 + rkb) * N + rn)
        acc = tl.dot(a, b, acc)
    tl.store(out_ptr + rb * M * N + rm * N + rn, acc)
