"""@triton.jit kernels shared by the ir / lower / e2e / runtime tests."""

import triton
import triton.language as tl

from msltrans.workloads.small_kernels import broadcast_add_kernel  # noqa: F401 - shared


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
