"""Small kernels that the self-test, the tests and the compile-latency benchmark share: tutorial
01's vector add and tutorial 02's softmax in their smallest form (one block, one row per
program), and a 2-D broadcast add (2-D tiles masked on both edges, a row vector broadcast
against the tile). Written for this project."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@triton.jit
def softmax(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


@triton.jit
def broadcast_add_kernel(x_ptr, row_ptr, out_ptr, M, N, stride_m,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # out[m, n] = x[m, n] + row[n], 2-D tiles with masks on both edges.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_m + rn[None, :], mask=mask, other=0.0)
    row = tl.load(row_ptr + rn, mask=rn < N, other=0.0)
    tl.store(out_ptr + rm[:, None] * stride_m + rn[None, :], x + row[None, :], mask=mask)
