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
