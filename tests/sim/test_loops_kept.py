"""Kernels with a very large function keep their long element loops as loops on the
simulator (msltrans/sim/unroll.py, cap_preprocessed): which loops lose the unroll pragma,
which kernels are built that way, and that the results keep their bytes in lanes mode and on
fibers."""

from __future__ import annotations

import numpy as np

import msltrans.sim as sim
from msltrans.sim import unroll
from tests.support.sim_cache import build_metadata, fresh_cache
from tests.support.sim_modes import assert_same_bytes_in_each_mode

PRAGMA = "#pragma clang loop unroll(full)\n"


def test_only_the_pragmas_of_long_loops_go():
    marker = '# 12 "k.metal"\n'
    loops = [
        "    for (uint msl_r = 0; msl_r < 8u; ++msl_r) {\n",        # long: goes
        "    for (uint msl_r = 0; msl_r < 2u; ++msl_r) {\n",        # short: stays
        "    for (uint r = 0; r < 16u; r += 8u) {\n",               # 2 trips: stays
        "    for (uint r = 0; r < 64u; r += 4u) {\n",               # 16 trips: goes
    ]
    text = (PRAGMA + loops[0] + PRAGMA + loops[1] + PRAGMA + marker + loops[2]
            + PRAGMA + marker + loops[3] + PRAGMA + "    while (true) {\n"
            + "    for (uint i = 0; i < 64u; ++i) {\n")   # no pragma: nothing to do
    out = unroll.cap_preprocessed(text)
    assert out.count("\n") == text.count("\n")
    assert out == ("\n" + loops[0] + PRAGMA + loops[1] + PRAGMA + marker + loops[2]
                    + "\n" + marker + loops[3] + PRAGMA + "    while (true) {\n"
                    + "    for (uint i = 0; i < 64u; ++i) {\n")
    assert unroll.cap_preprocessed(text, max_trips=16).count(PRAGMA) == 5


def test_the_size_rule():
    assert unroll.LARGE_FUNCTION_INSTRUCTIONS == 20_000
    assert unroll.wants_loops(20_000) and not unroll.wants_loops(19_999)


# Element loops as msltrans writes them, a SIMD op in one of them (a lanes entry), an
# explicit fma and fp16 arithmetic.
KERNEL = """#include <metal_stdlib>
using namespace metal;
#define msl_unroll _Pragma("clang loop unroll(full)")
kernel void loops(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  device half* h [[buffer(2)]], uint i [[thread_position_in_grid]],
                  uint lane [[thread_index_in_simdgroup]]) {
    float a[8];
    msl_unroll for (uint msl_r = 0; msl_r < 8u; ++msl_r) {
        a[msl_r] = x[i * 8u + msl_r] * 1.5f + float(msl_r);
    }
    msl_unroll for (uint msl_r = 0; msl_r < 8u; ++msl_r) {
        a[msl_r] = simd_shuffle_xor(a[msl_r], ushort((lane + msl_r) & 7u));
    }
    float s = 0.0f;
    half t = half(0.0f);
    msl_unroll for (uint msl_r = 0; msl_r < 8u; ++msl_r) {
        s = fma(a[msl_r], 0.25f, s);
        t = t * half(0.5f) + half(a[msl_r]);
    }
    msl_unroll for (uint msl_r = 0; msl_r < 2u; ++msl_r) {
        s += a[msl_r * 7u];
    }
    y[i] = s;
    h[i] = t;
}
"""


def _run(lib) -> list[np.ndarray]:
    x = np.random.default_rng(7).standard_normal(64 * 8).astype(np.float32)
    outs = [np.zeros(64, np.float32), np.zeros(64, np.float16)]
    lib.loops(x, *outs, threads=64, group_size=64)
    return outs


def test_loops_kept_give_the_same_bytes(monkeypatch, tmp_path):
    fresh_cache(monkeypatch, tmp_path)
    unrolled = sim.compile_shader(KERNEL, name="unrolled.metal")
    assert build_metadata("unrolled.metal")["element_loops"] == "unrolled"
    monkeypatch.setattr(unroll, "LARGE_FUNCTION_INSTRUCTIONS", 10)
    kept = sim.compile_shader(KERNEL, name="kept.metal")
    assert build_metadata("kept.metal")["element_loops"] == "kept"
    # A large function without long element loops has nothing to keep.
    short = KERNEL.replace("8u", "2u").replace("float a[8]", "float a[16]")
    sim.compile_shader(short, name="short.metal")
    assert build_metadata("short.metal")["element_loops"] == "unrolled"
    assert unrolled.loops.lanes and kept.loops.lanes
    expected = _run(unrolled)
    assert np.isfinite(expected[0]).all() and np.isfinite(expected[1]).all()
    assert expected[1].any()
    assert_same_bytes_in_each_mode(expected, lambda: _run(kept), monkeypatch)
