"""The lanes pass's liveness (msltrans/sim/lanes/live.cpp): each block's set of reaching
resume blocks answers, per value, what a backward walk of its paths would. With
MSLTRANS_SIM_LANES_CHECK_LIVE set the pass walks every value too and stops the build on a
difference; kernels with rendezvous in loops (values on a cycle with a resume block),
straight-line code after them and lanes that return early build so, and run as on fibers."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import msltrans.sim as sim
from msltrans.sim.compiler import find_compiler
from msltrans.sim.lanes.plugin import plugin
from tests.sim.test_lanes import BLOCK_REDUCE, HEADER

pytestmark = pytest.mark.skipif(plugin(find_compiler()) is None,
                                reason="LLVM's C++ headers (llvm-19-dev) are not installed")

LOOPS = HEADER + """
kernel void loops(device float* x [[buffer(0)]], device const int* n [[buffer(1)]],
                  uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
    float a = x[i];
    float b = a * 2.0f;
    float acc = 0.0f;
    for (int k = 0; k < n[0]; ++k) {       // a rendezvous on a cycle
        float t = a + float(k);
        acc += simd_sum(t) + b;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (lane % 3 == 0) acc -= t;         // a value defined before, used after
    }
    float c = simd_max(acc) + b;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int k = 0; k < 4; ++k) c += simd_shuffle_xor(c, ushort(1 << k)) * 0.5f;
    x[i] = c + a;   // SALT
}
"""


def _loops_reference(x: np.ndarray, n: int) -> np.ndarray:
    """float64 model of LOOPS for one simdgroup of 32 (integer-valued: every step exact)."""
    a = x.astype(np.float64)
    b = a * 2
    lane = np.arange(32)
    acc = np.zeros(32)
    for k in range(n):
        t = a + k
        acc += t.sum() + b
        acc -= np.where(lane % 3 == 0, t, 0)
    c = acc.max() + b
    for k in range(4):
        c = c + c[lane ^ (1 << k)] * 0.5
    return c + a


def test_checked_liveness_builds_and_runs(monkeypatch):
    monkeypatch.setenv("MSLTRANS_SIM_LANES_CHECK_LIVE", "1")
    salt = uuid.uuid4().hex   # a fresh source: the pass runs (and checks) now
    lib = sim.compile_shader(LOOPS.replace("SALT", salt), name="lanes_live_loops.metal")
    assert lib.loops.lanes, "the lanes pass made no simdgroup entry for this kernel"
    reduce = sim.compile_shader(BLOCK_REDUCE + f"// {salt}\n", name="lanes_live_reduce.metal")
    assert reduce.block_reduce.lanes
    x0 = np.arange(32, dtype=np.float32) % 5 - 2
    n = np.array([3], np.int32)
    out = {}
    for mode in ("fibers", "lanes"):
        monkeypatch.setenv("MSLTRANS_SIM_LANES", mode)
        x = x0.copy()
        lib.loops(x, n, threads=32, group_size=32)
        out[mode] = x
    assert out["lanes"].tobytes() == out["fibers"].tobytes()
    np.testing.assert_array_equal(out["lanes"], _loops_reference(x0, 3))



def _shuffles(sites: int) -> str:
    steps = "".join(f"    v = v * 3u + simd_shuffle_xor(v, ushort({1 << (k % 5)}));\n"
                    for k in range(sites))
    return (HEADER + "kernel void chain(device uint* x [[buffer(0)]],\n"
            "                  uint i [[thread_position_in_grid]]) {\n"
            f"    uint v = x[i];\n{steps}    x[i] = v;   // {uuid.uuid4().hex}\n}}\n")


def _shuffles_reference(x: np.ndarray, sites: int) -> np.ndarray:
    v = x.astype(np.uint64)
    lane = np.arange(32)
    for k in range(sites):
        v = (v * 3 + v[lane ^ (1 << (k % 5))]) % 2**32
    return v.astype(np.uint32)


@pytest.mark.parametrize(("sites", "lanes"), [(256, True), (257, False)])
def test_more_rendezvous_sites_than_the_limit_run_on_fibers(sites, lanes):
    # Straight-line SIMD ops, each call one site (lanes_pass.cpp, LANES_MAX_SITES = 256):
    # past the limit the kernel keeps only its per-thread entry, with the same results.
    lib = sim.compile_shader(_shuffles(sites), name="lanes_sites.metal")
    assert lib.chain.lanes is lanes
    x0 = np.arange(32, dtype=np.uint32) * 7 + 1
    x = x0.copy()
    lib.chain(x, threads=32, group_size=32)
    np.testing.assert_array_equal(x, _shuffles_reference(x0, sites))
