"""The split compile of kernels with a very large function (msltrans/sim/split.py): which
kernels take it (the size rule), and that it gives the one-step compile's bytes in lanes mode
and on fibers (whose per-thread code it generates at -O0)."""

from __future__ import annotations

import numpy as np
import pytest

import msltrans.sim as sim
from msltrans.sim import split
from msltrans.sim.compiler import find_compiler
from tests.support.sim_cache import build_metadata, fresh_cache
from tests.support.sim_modes import assert_same_bytes_in_each_mode


def _function(name: str, instructions: int) -> str:
    body = "".join(f"  %v{i} = add i32 %a, {i}\n" for i in range(instructions - 1))
    return f"define i32 @{name}(i32 %a) {{\nentry:\n{body}  ret i32 %a\n}}\n\n"


def test_the_size_rule_counts_the_largest_function():
    limit = split.SPLIT_MIN_INSTRUCTIONS
    assert limit == 20_000
    header = 'target triple = "x86_64-pc-linux-gnu"\n\ndeclare void @f()\n\n'
    at_limit = header + _function("small", 20) + _function("kernel", limit)
    below = header + _function("kernel", limit - 1) + _function("other", limit - 1)
    assert split.largest_function(at_limit) == limit
    assert split.largest_function(below) == limit - 1
    assert split.wants_split(split.largest_function(at_limit))
    # Two functions just under the limit: the module is twice its size, and stays one step.
    assert not split.wants_split(split.largest_function(below))
    assert split.largest_function(header) == 0
    assert "-fno-slp-vectorize" in split.OPT_FLAGS and "-ffast-math" not in split.OPT_FLAGS

# Two simdgroups of a reduction, a shuffle and fp16 arithmetic: a lanes entry, libm and an
# explicit fma.
KERNEL = """#include <metal_stdlib>
using namespace metal;
kernel void split_me(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                     device half* h [[buffer(2)]], uint i [[thread_position_in_grid]],
                     uint lane [[thread_index_in_simdgroup]]) {
    float a = x[i];
    float s = simd_sum(exp(a) * 0.5f);
    float t = simd_shuffle_xor(fma(a, 1.0009765625f, s), 3u);
    y[i] = simd_prefix_inclusive_sum(t) + float(lane);
    h[i] = half(t) * half(1.5f) + half(a);
}
"""


def _run(lib) -> list[np.ndarray]:
    x = np.random.default_rng(5).standard_normal(64).astype(np.float32)
    outs = [np.zeros(64, np.float32), np.zeros(64, np.float16)]
    lib.split_me(x, *outs, threads=64, group_size=64)
    return outs


def _pipeline(name: str) -> str:
    return build_metadata(name)["pipeline"]


def test_split_compile_gives_the_same_bytes(monkeypatch, tmp_path):
    if split.extract_tool(find_compiler()) is None:
        pytest.skip("this clang has no `llvm-extract` next to it: kernels compile in one step")
    fresh_cache(monkeypatch, tmp_path)
    one = sim.compile_shader(KERNEL, name="one_step.metal")
    assert _pipeline("one_step.metal") == "one-step"
    monkeypatch.setattr(split, "SPLIT_MIN_INSTRUCTIONS", 10)
    two = sim.compile_shader(KERNEL, name="split.metal")
    assert _pipeline("split.metal") == "split"
    assert one.split_me.lanes and two.split_me.lanes
    expected = _run(one)
    assert np.isfinite(expected[0]).all() and expected[1].any()
    assert_same_bytes_in_each_mode(expected, lambda: _run(two), monkeypatch)


# No rendezvous: no lanes entry, so the split compile generates the per-thread code at -O2.
PLAIN = """#include <metal_stdlib>
using namespace metal;
kernel void plain(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    y[i] = fma(exp(x[i]), 0.75f, x[i] * x[i]);
}
"""


def test_split_compile_without_a_lanes_entry(monkeypatch, tmp_path):
    if split.extract_tool(find_compiler()) is None:
        pytest.skip("this clang has no `llvm-extract` next to it: kernels compile in one step")
    fresh_cache(monkeypatch, tmp_path)
    x = np.random.default_rng(6).standard_normal(64).astype(np.float32)
    outs = []
    for name, limit in (("plain_one.metal", 20_000), ("plain_split.metal", 10)):
        monkeypatch.setattr(split, "SPLIT_MIN_INSTRUCTIONS", limit)
        lib = sim.compile_shader(PLAIN, name=name)
        assert not lib.plain.lanes
        y = np.zeros(64, np.float32)
        lib.plain(x, y, threads=64, group_size=32)
        outs.append(y)
    assert _pipeline("plain_split.metal") == "split"
    assert outs[0].tobytes() == outs[1].tobytes() and np.isfinite(outs[0]).all()
