"""Floating-point contraction, as Triton's `enable_fp_fusion` decides it (default on):
an fmul whose only use is an fadd/fsub becomes one fma (what ptxas --fmad does on NVIDIA);
a product with another use, or any product with fusion off, is rounded on its own.
Checked bit for bit on f32, f16 and bf16, and against NVIDIA's recorded f16/bf16 a*b+c
(fused there too: tests/data/cuda/elementwise_semantics_extra.npz).
"""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.workloads.elementwise_kernels import muladd_kernel
from tests.support.diff import (
    TRITON_PTR,
    as_float,
    assert_same_bits,
    bf16_from_f32,
    compile_typed,
    cuda_reference,
    f32_round_to_odd,
    launch,
    np_dtype,
)
from tests.support.fma import fma_f32

EXTRA = cuda_reference("elementwise_semantics_extra")

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


def _exact_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    # 16-bit inputs within 2**-14 .. 2**6: a*b + c is exact in float64.
    return a.astype(np.float64) * b + c


def _store(dtype: str, x64: np.ndarray) -> np.ndarray:
    """float64 → dtype storage with one rounding."""
    if dtype == "bfloat16":
        return bf16_from_f32(f32_round_to_odd(np.asarray(x64, np.float64)))
    return np.asarray(x64).astype(dtype)


def _rounded(dtype: str, x: np.ndarray) -> np.ndarray:
    return as_float(_store(dtype, x), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("fusion", [True, False])
def test_fp_fusion_follows_the_option(dtype: str, fusion: bool) -> None:
    rng = np.random.default_rng(7)
    n = 1000
    a64, b64 = rng.uniform(-4, 4, n), rng.uniform(-4, 4, n)
    a, b = _store(dtype, a64), _store(dtype, b64)
    av, bv = (as_float(v, dtype) for v in (a, b))
    c = _store(dtype, -(av * bv) * (1 + rng.uniform(-1e-3, 1e-3, n)))
    # a*b + c = 1 + 3*2**-11 - 2**-31 (f16; 2**-7 steps for bf16): just below a midpoint,
    # but exactly on it once rounded to f32, so fmaf-then-round would round the wrong way.
    u = 2.0**-10 if dtype == "float16" else 2.0**-7
    a[0], b[0], c[0] = _store(dtype, np.array([2.0**-5 * (1 + u), 2.0**-6 * (1 - u), 1 + u]))
    av, bv, cv = (as_float(v, dtype) for v in (a, b, c))
    out = np.zeros(5 * n, np_dtype(dtype))
    ptr = TRITON_PTR[dtype]
    sig = {"a_ptr": ptr, "b_ptr": ptr, "c_ptr": ptr, "out_ptr": ptr, "n": "i32"}
    program = compile_typed(fusion_kernel, sig, {"BLOCK": BLOCK}, enable_fp_fusion=fusion)
    body = program.source[program.source.index("kernel void"):]
    marker = "msl_fma16<bfloat>(" if dtype == "bfloat16" else "fma("
    assert (marker in body) == fusion
    assert "msl_fma16<half>" not in body   # Metal's fma on half rounds once (Table 8.3)
    launch(program, (triton.cdiv(n, BLOCK),), a, b, c, out, n)
    got = out.reshape(5, n)
    with np.errstate(all="ignore"):
        if dtype == "float32":
            fused = [fma_f32(a, b, c), fma_f32(a, c, -b), fma_f32(-b, c, c)]
            fused = [f.astype(np.float64) for f in fused]
        else:
            fused = [_exact_fma(av, bv, cv), _exact_fma(av, cv, -bv), _exact_fma(-bv, cv, cv)]
        split = [_rounded(dtype, av * bv) + cv, _rounded(dtype, av * cv) - bv,
                 cv - _rounded(dtype, bv * cv)]
        want = fused if fusion else split
        want += [_rounded(dtype, av * av) + cv, av * av]
    for k, w in enumerate(want):
        assert_same_bits(got[k], _store(dtype, w) if dtype != "float32" else
                         np.asarray(w, np.float32), dtype, f"output {k} fusion={fusion}")
    if fusion:  # the cancellation makes fused and unfused results differ: a real check
        assert (got[0] != _store(dtype, split[0])).mean() > 0.3


def np_ctype(dtype: str) -> str:
    return {"float16": "half", "bfloat16": "bfloat"}[dtype]



@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_muladd_like_cuda(dtype: str) -> None:
    a, b, c = (v.view(np_dtype(dtype)) for v in EXTRA[f"muladd_{dtype}_in"])
    n = len(a)
    out = np.zeros(n, np_dtype(dtype))
    ptr = TRITON_PTR[dtype]
    sig = {"a_ptr": ptr, "b_ptr": ptr, "c_ptr": ptr, "out_ptr": ptr, "n": "i32"}
    launch(compile_typed(muladd_kernel, sig, {"BLOCK": BLOCK}), (triton.cdiv(n, BLOCK),),
           a, b, c, out, n)
    assert_same_bits(out, EXTRA[f"muladd_{dtype}"].view(np_dtype(dtype)), dtype, "cuda")
