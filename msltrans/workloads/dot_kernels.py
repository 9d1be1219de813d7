"""@triton.jit kernels for the tt.dot tests (tests/e2e/test_dot*.py) and benchmarks."""

from __future__ import annotations

import triton
import triton.language as tl

from msltrans.workloads.grouped_matmul import ieee_tile


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
def matmul_f32_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sa_m, sa_k, sb_k, sb_n, sc_m, sc_n,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                      GROUP_M: tl.constexpr):
    """workloads/grouped_matmul.py's kernel with fp32 operands, storing the fp32 accumulator
    itself (so every bit of the K-loop fma chain is checked, not just an fp16 rounding of it);
    also the cross-vendor kernel (scripts/cuda_reference/dot_reference.py)."""
    tile_m, tile_n, acc = ieee_tile(a_ptr, b_ptr, M, N, K, sa_m, sa_k, sb_k, sb_n, BM, BN, BK,
                                    GROUP_M)
    c_rows = tile_m * BM + tl.arange(0, BM)
    c_cols = tile_n * BN + tl.arange(0, BN)
    c_at = c_ptr + sc_m * c_rows[:, None] + sc_n * c_cols[None, :]
    tl.store(c_at, acc, mask=(c_rows[:, None] < M) & (c_cols[None, :] < N))


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


@triton.jit
def matmul_store_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, sa_m, sa_k, sb_k, sb_n, sc_m,
                        sc_n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                        GROUP_M: tl.constexpr, MASKED: tl.constexpr, BIAS: tl.constexpr):
    """matmul_f32_kernel storing the accumulator as c_ptr's element type (fp32, fp16 or bf16:
    one round-to-nearest-even rounding), under the bounds mask or (MASKED false: M and N
    multiples of the block) none, after adding a per-column fp32 bias and scaling by 0.5
    when BIAS: the resident epilogue's stores (lower/dot/direct_store.py)."""
    tile_m, tile_n, acc = ieee_tile(a_ptr, b_ptr, M, N, K, sa_m, sa_k, sb_k, sb_n, BM, BN, BK,
                                    GROUP_M)
    c_rows = tile_m * BM + tl.arange(0, BM)
    c_cols = tile_n * BN + tl.arange(0, BN)
    c_at = c_ptr + sc_m * c_rows[:, None] + sc_n * c_cols[None, :]
    if BIAS:
        acc = (acc + tl.load(bias_ptr + c_cols, mask=c_cols < N, other=0.0)[None, :]) * 0.5
    if MASKED:
        tl.store(c_at, acc.to(c_ptr.dtype.element_ty),
                 mask=(c_rows[:, None] < M) & (c_cols[None, :] < N))
    else:
        tl.store(c_at, acc.to(c_ptr.dtype.element_ty))
