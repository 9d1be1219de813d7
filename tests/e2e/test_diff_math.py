"""Differential suite, math: every `tl.*` f32 math function through one unmodified kernel,
against float64 references. Exact functions (floor, ceil, abs, sqrt_rn, div_rn) are
compared bit for bit; transcendentals within the ULP bounds below, which are the errors
measured on the simulator (host libm underneath) and are stated in docs/semantics.md, "Math
accuracy". Special values (±0, ±inf, NaN, denormals) must match exactly everywhere.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import triton
import triton.language as tl

from tests.support.diff import assert_same_bits, compile_typed, launch, ulp_error

# Max |got - exact| in units of the last place of the float32 result, as measured on the
# simulator over 10**6 inputs (the slow sweep below; 0.5 is correct rounding). rsqrt is
# 1 / sqrt rounded twice; erf is our own polynomial (templates/elementwise_support.metal).
ULP_BOUND = {"exp": 0.51, "exp2": 0.51, "log": 0.8, "log2": 0.8, "sin": 0.6, "cos": 0.6,
             "sqrt": 0.5, "rsqrt": 1.5, "erf": 1.0}
EXACT = ("floor", "ceil", "abs", "sqrt_rn", "div_rn")
OPS = (*ULP_BOUND, *EXACT)
BLOCK = 256


@triton.jit
def math_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, tl.exp(x), mask=m)
    tl.store(out_ptr + 1 * n + offs, tl.exp2(x), mask=m)
    tl.store(out_ptr + 2 * n + offs, tl.log(x), mask=m)
    tl.store(out_ptr + 3 * n + offs, tl.log2(x), mask=m)
    tl.store(out_ptr + 4 * n + offs, tl.sin(x), mask=m)
    tl.store(out_ptr + 5 * n + offs, tl.cos(x), mask=m)
    tl.store(out_ptr + 6 * n + offs, tl.sqrt(x), mask=m)
    tl.store(out_ptr + 7 * n + offs, tl.rsqrt(x), mask=m)
    tl.store(out_ptr + 8 * n + offs, tl.erf(x), mask=m)
    tl.store(out_ptr + 9 * n + offs, tl.floor(x), mask=m)
    tl.store(out_ptr + 10 * n + offs, tl.ceil(x), mask=m)
    tl.store(out_ptr + 11 * n + offs, tl.abs(x), mask=m)
    tl.store(out_ptr + 12 * n + offs, tl.sqrt_rn(x), mask=m)
    tl.store(out_ptr + 13 * n + offs, tl.div_rn(x, y), mask=m)


_REF = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sin": np.sin,
    "cos": np.cos, "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "erf": np.vectorize(math.erf, otypes=[np.float64]), "floor": np.floor, "ceil": np.ceil,
    "abs": np.abs, "sqrt_rn": np.sqrt,
}


def _inputs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 1e-45, -1e-45,
                         1.1754942e-38, 88.7, -103.9, 128.0, -150.0, 3.4e38, 1e-30, 3.9,
                         -3.9, 10.0, 0.9277, -0.9277, 0.9278], np.float32)
    wide = (rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-8, 2, n)).astype(np.float32)
    near = rng.uniform(-6.0, 6.0, n).astype(np.float32)  # where erf/sin/cos/exp vary most
    x = np.concatenate([specials, wide, near])
    y = np.roll(x, 5)
    return x, y


def _run(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, y = _inputs(n, seed)
    total = len(x)
    out = np.zeros(len(OPS) * total, np.float32)
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    launch(compile_typed(math_kernel, sig, {"BLOCK": BLOCK}), (triton.cdiv(total, BLOCK),),
           x, y, out, total)
    return x, y, out.reshape(len(OPS), total)


def check(x: np.ndarray, y: np.ndarray, got: np.ndarray) -> dict[str, float]:
    """Assert every op; return the max ULP error seen per transcendental."""
    worst = {}
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        for k, op in enumerate(OPS):
            if op == "div_rn":
                want = (x / y).astype(np.float32)
                assert_same_bits(got[k], want, "float32", op)
                continue
            ref = _REF[op](x64)
            if op in EXACT:
                assert_same_bits(got[k], ref.astype(np.float32), "float32", op)
                continue
            ref32 = ref.astype(np.float32)
            special = ~np.isfinite(ref32) | (ref32 == 0) | ~np.isfinite(x)
            assert_same_bits(got[k][special], ref32[special], "float32", f"{op} specials")
            err = ulp_error(got[k][~special], ref[~special])
            worst[op] = float(err.max())
            bad = np.flatnonzero(err > ULP_BOUND[op])
            assert not bad.size, (f"{op}: {worst[op]:.2f} ulp at x = "
                                  f"{x[~special][bad[:5]].tolist()}")
    return worst


def test_math_f32_within_bounds() -> None:
    check(*_run(1500, 5))


@pytest.mark.slow
def test_math_f32_within_bounds_large_sweep() -> None:
    worst = check(*_run(500_000, 6))
    print("max ulp:", worst)
