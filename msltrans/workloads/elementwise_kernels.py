"""Elementwise kernels shared by scripts/cuda_reference/elementwise_semantics_extra.py (which
records Triton's CUDA backend's bits on the lent NVIDIA GPU, tests/data/cuda/
elementwise_semantics_extra.npz) and the differential tests that replay those bits through
msltrans (tests/e2e/test_diff_float.py, tests/e2e/test_diff_fusion.py)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def clamp_kernel(x_ptr, lo_ptr, hi_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    lo = tl.load(lo_ptr + offs, mask=m)
    hi = tl.load(hi_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.clamp(x, lo, hi), mask=m)
    tl.store(out_ptr + n + offs, tl.clamp(x, -2.0, 2.0), mask=m)
    tl.store(out_ptr + 2 * n + offs, tl.clamp(x, lo, hi, propagate_nan=tl.PropagateNan.ALL),
             mask=m)
    tl.store(out_ptr + 3 * n + offs, tl.clamp(x, -hi, hi), mask=m)


@triton.jit
def muladd_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    c = tl.load(c_ptr + offs, mask=m)
    tl.store(out_ptr + offs, a * b + c, mask=m)
