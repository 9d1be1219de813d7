"""@triton.jit kernels shared by the ir / lower / e2e / runtime tests."""

import triton
import triton.language as tl


@triton.jit
def vadd_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # out = a + b over n elements, one BLOCK-wide slice per program; the slice that runs past
    # n is masked (its loads read nothing, its store writes nothing).
    prog = tl.program_id(axis=0)
    first = prog * BLOCK
    idx = first + tl.arange(0, BLOCK)
    live = idx < n
    a = tl.load(a_ptr + idx, mask=live)
    b = tl.load(b_ptr + idx, mask=live)
    total = a + b
    tl.store(out_ptr + idx, total, mask=live)


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
