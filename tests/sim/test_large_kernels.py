"""The three-step compile of very large kernels (msltrans/sim/large.py) gives the bytes the
one-step compile gives."""

from __future__ import annotations

import numpy as np
import pytest

import msltrans.sim as sim
from msltrans.sim import build, large
from msltrans.sim.compiler import find_compiler
from tests.support.sim_cache import fresh_cache

# Element loops of every shape the emitted code has: float and half arithmetic, an
# explicit fma, a libm call, integer wrap-around, a conversion, a reduction across lanes.
KERNEL = """#include <metal_stdlib>
using namespace metal;
kernel void many_loops(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                       device half* h [[buffer(2)]], device int* n [[buffer(3)]],
                       uint i [[thread_position_in_grid]]) {
    float a[4]; half b[4]; int c[4];
    for (uint r = 0; r < 4u; ++r) a[r] = x[4 * i + r];
{body}
    float s = 0.0f;
    for (uint r = 0; r < 4u; ++r) s += a[r] + float(b[r]);
    y[i] = simd_sum(s);
    for (uint r = 0; r < 4u; ++r) { h[4 * i + r] = b[r]; n[4 * i + r] = c[r]; }
}
"""
STEP = """    for (uint r = 0; r < 4u; ++r) a[r] = fma(a[r], 1.0009765625f, -0.25f) * 0.75f;
    for (uint r = 0; r < 4u; ++r) b[r] = half(a[r]) * half(1.5f) + b[r];
    for (uint r = 0; r < 4u; ++r) c[r] = int(uint(c[r]) * 1664525u + uint(as_type<int>(a[r])));
    for (uint r = 0; r < 4u; ++r) a[r] = a[r] + exp(float(b[r]) * 0.001f) * 1e-3f;
"""


def _source(steps: int) -> str:
    init = "    for (uint r = 0; r < 4u; ++r) { b[r] = half(0.0f); c[r] = int(r); }\n"
    return KERNEL.replace("{body}", init + STEP * steps)


def _run(lib) -> list[np.ndarray]:
    x = np.random.default_rng(3).standard_normal(4 * 64).astype(np.float32)
    outs = [np.zeros(64, np.float32), np.zeros(256, np.float16), np.zeros(256, np.int32)]
    lib.many_loops(x, *outs, threads=64, group_size=32)
    return outs


def test_three_step_compile_gives_the_same_bytes(monkeypatch, tmp_path):
    if large.opt_tool(find_compiler()) is None:
        pytest.skip("this clang has no `opt` next to it: large kernels compile in one step")
    fresh_cache(monkeypatch, tmp_path)
    source = _source(40)   # 165 loops
    assert not large.is_large(source)
    one_step = _run(sim.compile_shader(source))
    calls = []
    real = build.compile_large

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(large, "LARGE_KERNEL_LOOPS", 100)
    monkeypatch.setattr(build, "compile_large", counting)
    assert large.is_large(source)
    three_step = _run(sim.compile_shader(source, name="three_step.metal"))
    assert calls == [1]
    for a, b in zip(one_step, three_step, strict=True):
        assert a.tobytes() == b.tobytes()
    assert np.isfinite(one_step[0]).all() and one_step[2].any()
