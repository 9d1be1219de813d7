"""A tiled fp16/fp32 matmul with a grouped program order, written for msltrans's tests.

The workload of Triton's tutorial 03 (its kernel runs unmodified out of tree through
scripts/run_tutorials.py): one program per [BM, BN] tile of C = A @ B, a K loop that carries
an fp32 accumulator through `tl.dot` with the K tail masked, rows and columns past M and N
wrapped with `%` on the way in and masked on the way out, an optional fused activation, and
the result stored as fp16. Block sizes and num_warps come from the caller (no autotuning).
"""

import triton
import triton.language as tl


@triton.jit
def grouped_tile(tile, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    """(tile row, tile column) of program `tile`. Programs walk C in bands of GROUP_M tile
    rows, column by column inside a band, so consecutive programs reuse the same few A rows
    and B columns (a plain row-major order would stream all of B for every tile row)."""
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    band_tiles = GROUP_M * tiles_n
    band = tile // band_tiles
    band_top = band * GROUP_M
    band_height = min(tiles_m - band_top, GROUP_M)  # the last band may be shorter
    in_band = tile % band_tiles
    return band_top + in_band % band_height, in_band // band_height


@triton.jit
def leaky(v):
    # Slope 0.01 below zero, applied to the fp32 accumulator before the fp16 rounding.
    return tl.where(v >= 0, v, 0.01 * v)


@triton.jit
def ieee_tile(a_ptr, b_ptr, M, N, K, sa_m, sa_k, sb_k, sb_n, BM: tl.constexpr,
              BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    """The grouped tile of this program and its fp32 accumulator over K (inlined by Triton):
    the K loop of grouped_matmul_kernel and of workloads/dot_kernels.py's fp32 matmuls."""
    tile_m, tile_n = grouped_tile(tl.program_id(axis=0), M, N, BM, BN, GROUP_M)
    # Rows/columns past the edge read wrapped (valid) memory; the store drops them.
    a_rows = (tile_m * BM + tl.arange(0, BM)) % M
    b_cols = (tile_n * BN + tl.arange(0, BN)) % N
    kk = tl.arange(0, BK)
    a_at = a_ptr + (a_rows[:, None] * sa_m + kk[None, :] * sa_k)
    b_at = b_ptr + (kk[:, None] * sb_k + b_cols[None, :] * sb_n)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BK)):
        k_left = K - step * BK  # columns of A / rows of B still to go; zeros past K
        a = tl.load(a_at, mask=kk[None, :] < k_left, other=0.0)
        b = tl.load(b_at, mask=kk[:, None] < k_left, other=0.0)
        # ieee spelled out: it is msltrans's default, but Triton's CUDA backend defaults to
        # tf32 for fp32 operands.
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_at += BK * sa_k
        b_at += BK * sb_k
    return tile_m, tile_n, acc


@triton.jit
def grouped_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sa_m, sa_k, sb_k, sb_n, sc_m, sc_n,
                          BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                          GROUP_M: tl.constexpr, EPILOGUE: tl.constexpr):
    """C[M, N] (fp16) = A[M, K] @ B[K, N] through element strides, any M, N, K."""
    tile_m, tile_n, acc = ieee_tile(a_ptr, b_ptr, M, N, K, sa_m, sa_k, sb_k, sb_n, BM, BN, BK,
                                    GROUP_M)
    if EPILOGUE == "leaky":
        acc = leaky(acc)
    c = acc.to(tl.float16)
    c_rows = tile_m * BM + tl.arange(0, BM)
    c_cols = tile_n * BN + tl.arange(0, BN)
    c_at = c_ptr + sc_m * c_rows[:, None] + sc_n * c_cols[None, :]
    tl.store(c_at, c, mask=(c_rows[:, None] < M) & (c_cols[None, :] < N))
