"""Floating-point contraction, as Triton's `enable_fp_fusion` decides it (default on):
an fmul whose only use is an fadd/fsub becomes one fma (what ptxas --fmad does on NVIDIA);
a product with another use, or any product with fusion off, is rounded on its own.
Checked bit for bit on f32 and f16 (bf16 arithmetic is not fused: see docs/semantics.md).
"""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from tests.support.diff import TRITON_PTR, assert_same_bits, compile_typed, launch
from tests.support.fma import fma_f32

BLOCK = 128


@triton.jit
def fusion_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    c = tl.load(c_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, a * b + c, mask=m)
    tl.store(out_ptr + 1 * n + offs, a * c - b, mask=m)
    tl.store(out_ptr + 2 * n + offs, c - b * c, mask=m)
    p = a * a  # two uses: never fused
    tl.store(out_ptr + 3 * n + offs, p + c, mask=m)
    tl.store(out_ptr + 4 * n + offs, p, mask=m)


def _fma16(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    # f16 products are exact in f64 and the sum of three f16-exponent-range values is
    # exact in f64 here (inputs are within 2**-14 .. 2**6), so one rounding to f16 remains.
    return (a.astype(np.float64) * b + c).astype(np.float16)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("fusion", [True, False])
def test_fp_fusion_follows_the_option(dtype: str, fusion: bool) -> None:
    rng = np.random.default_rng(7)
    n = 1000
    a = rng.uniform(-4, 4, n).astype(dtype)
    b = rng.uniform(-4, 4, n).astype(dtype)
    c = (-(a.astype(np.float64) * b) * (1 + rng.uniform(-1e-3, 1e-3, n))).astype(dtype)
    # a*b + c = 1 + 3*2**-11 - 2**-31: just below an f16 midpoint, but exactly on it once
    # rounded to f32, so an f32 fma followed by rounding to f16 would round the wrong way.
    a[0], b[0], c[0] = 2.0**-5 * (1 + 2.0**-10), 2.0**-6 * (1 - 2.0**-10), 1 + 2.0**-10
    out = np.zeros(5 * n, dtype)
    ptr = TRITON_PTR[dtype]
    sig = {"a_ptr": ptr, "b_ptr": ptr, "c_ptr": ptr, "out_ptr": ptr, "n": "i32"}
    program = compile_typed(fusion_kernel, sig, {"BLOCK": BLOCK}, enable_fp_fusion=fusion)
    body = program.source[program.source.index("kernel void"):]
    assert (("fma(" if dtype == "float32" else "msl_fma16<half>(") in body) == fusion
    launch(program, (triton.cdiv(n, BLOCK),), a, b, c, out, n)
    got = out.reshape(5, n)
    fma = fma_f32 if dtype == "float32" else _fma16
    with np.errstate(all="ignore"):
        if fusion:
            want = [fma(a, b, c), fma(a, c, -b), fma(-b, c, c)]
        else:
            want = [a * b + c, a * c - b, c - b * c]
        want += [a * a + c, a * a]
    for k, w in enumerate(want):
        assert_same_bits(got[k], np.asarray(w, dtype), dtype, f"output {k} fusion={fusion}")
    if fusion:  # the cancellation makes fused and unfused results differ: a real check
        assert (got[0] != (a * b + c)).mean() > 0.3
