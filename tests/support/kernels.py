"""Unmodified Triton kernels shared by the ir / lower / e2e tests."""

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # Triton tutorial 01, verbatim.
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


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


@triton.jit
def loop_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, n):
        v = tl.load(x_ptr + i * BLOCK + offs)
        if i % 2 == 0:
            acc += v
        else:
            acc -= v
    tl.store(out_ptr + offs, acc * 0.5)


@triton.jit
def reduce_scan_while_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    s = tl.sum(x, axis=0)
    c = tl.cumsum(x, axis=0, reverse=True)
    i = 0
    while i < n:
        i += 3
    tl.store(out_ptr + offs, c + s + i)
