"""Control flow: a `for` loop with a loop-carried accumulator (scf.for), a data-dependent
branch inside it (scf.if), and a `while` loop (scf.while).

Each program owns one row of `x` (n_rows × n_cols) and computes, in one pass over column
blocks, the sum of the positive entries and the sum of the rest (scf.for + scf.if on a
scalar), then walks a Collatz sequence from the row index to count its steps (scf.while).
The reference is plain numpy / Python.

This needs the scf.for / scf.if / scf.while lowerings. Where one is missing, msltrans
refuses the kernel with MetalNonRecoverableError naming the op, and this script says so and
exits with status 2 — it never prints a plausible-but-wrong result. Exit status 1 means a
wrong result, 0 a match: the float sums within 1e-5 relative (the kernel adds per lane, then
across lanes — another order than numpy's), the Collatz step counts exactly.

    python examples/loops_and_branches.py
"""

import sys

import numpy as np
import torch
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def row_stats_kernel(x_ptr, pos_ptr, neg_ptr, steps_ptr, n_cols, stride,
                     BLOCK: tl.constexpr):
    row = tl.program_id(0)
    pos = tl.zeros([BLOCK], dtype=tl.float32)
    neg = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):                      # scf.for, carried pos/neg
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        if start % (2 * BLOCK) == 0:                           # scf.if on a scalar
            pos += tl.where(v > 0, v, 0.0)
            neg += tl.where(v > 0, 0.0, v)
        else:
            pos += tl.maximum(v, 0.0)
            neg += tl.minimum(v, 0.0)
    tl.store(pos_ptr + row, tl.sum(pos, axis=0))
    tl.store(neg_ptr + row, tl.sum(neg, axis=0))
    k = row + 1
    steps = 0
    while k != 1:                                              # scf.while
        if k % 2 == 0:
            k = k // 2
        else:
            k = 3 * k + 1
        steps += 1
    tl.store(steps_ptr + row, steps)


def collatz_steps(k: int) -> int:
    steps = 0
    while k != 1:
        k = k // 2 if k % 2 == 0 else 3 * k + 1
        steps += 1
    return steps


def main() -> int:
    torch.manual_seed(0)
    n_rows, n_cols, block = 12, 1000, 128
    x = torch.randn(n_rows, n_cols, device=DEVICE)
    pos = torch.empty(n_rows, device=DEVICE)
    neg = torch.empty(n_rows, device=DEVICE)
    steps = torch.empty(n_rows, device=DEVICE, dtype=torch.int32)
    try:
        row_stats_kernel[(n_rows,)](x, pos, neg, steps, n_cols, x.stride(0), BLOCK=block)
    except MetalNonRecoverableError as exc:
        print(f"not supported yet (correct or refuse): {exc}")
        return 2
    xs = x.cpu().numpy()
    # The kernel sums per lane over blocks, then across lanes: compare with a tolerance
    # (a different summation order), and the integer results exactly.
    want_pos = np.where(xs > 0, xs, 0).sum(axis=1)
    want_neg = np.where(xs > 0, 0, xs).sum(axis=1)
    want_steps = np.array([collatz_steps(r + 1) for r in range(n_rows)], dtype=np.int32)
    ok = (np.allclose(pos.cpu().numpy(), want_pos, rtol=1e-5, atol=1e-4)
          and np.allclose(neg.cpu().numpy(), want_neg, rtol=1e-5, atol=1e-4)
          and np.array_equal(steps.cpu().numpy(), want_steps))
    err = max(np.max(np.abs(pos.cpu().numpy() - want_pos)),
              np.max(np.abs(neg.cpu().numpy() - want_neg)))
    print(f"engine: {triton.runtime.driver.active.engine_name}; max error {err:g}; "
          f"collatz steps match: {np.array_equal(steps.cpu().numpy(), want_steps)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
