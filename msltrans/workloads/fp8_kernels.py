"""The fp8 downcast shared by scripts/cuda_reference/fp8_conversions.py (which records Triton's
CUDA backend's bits on the lent NVIDIA GPU, tests/data/cuda/fp8_conversions.npz) and
tests/e2e/test_fp8.py (which replays them through msltrans)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def fp8_downcast(x_ptr, o_ptr, n, DST: tl.constexpr, SRC: tl.constexpr, RTZ: tl.constexpr,
                 BLOCK: tl.constexpr):
    """o = x converted to the fp8 type DST (round to nearest even, or toward zero when RTZ),
    stored as its bits; SRC, when given, is the float type whose bits x holds (the test feeds
    f16 / bf16 as 16-bit integers), None when x is already a float tensor."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if SRC is not None:
        x = x.to(SRC, bitcast=True)
    if RTZ:
        y = x.to(DST, fp_downcast_rounding="rtz")
    else:
        y = x.to(DST)
    tl.store(o_ptr + offs, y.to(tl.uint8, bitcast=True), mask=m)
