"""msltrans.sim.profile: counts per kernel and per source line, checked against what the
kernels below do (access widths from the accessed type, 128-byte segments per simdgroup-wide
access, threadgroup bank cycles under 32 banks x 4 bytes, barriers, SIMD ops, MMAs)."""

# ruff: noqa: E501 -- embedded MSL sources keep their own line structure

from __future__ import annotations

import numpy as np
import pytest

import msltrans.sim as sim
from msltrans.sim.profile_report import CHIPS

WIDTHS = """#include <metal_stdlib>
using namespace metal;
kernel void widths(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                   device const half* h [[buffer(2)]], device const uint* u [[buffer(3)]],
                   uint i [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]]) {
    threadgroup float tile[256];
    float4 v = *(device const float4*)(x + 4 * i);
    half4 hv = *(device const packed_half4*)(h + 4 * i);
    uint4 uv = *(device const uint4*)(u + 4 * i);
    float2 f2 = *(device const float2*)(x + 4096 + 2 * i);
    float s = x[8192 + 16 * i];
    tile[lid] = s;
    tile[(lid * 32) % 256] += 1.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float t = tile[(lid + 1) % 256];
    float acc = 0.0f;
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < 4; ++k) acc += x[12288 + i + 256 * k];
    *(device float4*)(y + 4 * i) = v + float4(hv) + float4(uv) + t + f2.x + f2.y + acc;
    #pragma unroll
    for (uint k = 0; k < 2; ++k) y[1024 + i + 256 * k] = acc;
}
kernel void simd_and_mma(device float* m [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
    float v = m[lane];
    v += simd_shuffle_xor(v, 1);
    v += simd_shuffle_xor(v, 2);
    v = simd_sum(v);
    simdgroup_float8x8 a, d;
    simdgroup_load(a, m);
    simdgroup_multiply(d, a, a);
    simdgroup_store(d, m + 64);
    m[128 + lane] = v;
}
"""
N, GROUP = 256, 128   # 2 threadgroups of 4 simdgroups: 8 simdgroup-wide executions per site


@pytest.fixture(scope="module")
def lib():
    return sim.compile_shader(WIDTHS, name="widths.metal")


def _widths_args():
    x = np.arange(12288 + 1024, dtype=np.float32)
    return (x, np.zeros(4 * N + 512, np.float32), np.ones(4 * N, np.float16),
            np.ones(4 * N, np.uint32))


def test_counts_by_width_line_by_line(lib):
    args = _widths_args()
    with sim.profile() as prof:
        lib.widths(*args, threads=N, group_size=GROUP)
    k = prof.kernels["widths"]
    lines = {key.split(":")[1]: row.counters for key, row in k.lines.items()}
    sg = N // 32
    assert lines["7"].global_loads == {16: sg}             # float4 through a cast pointer
    assert lines["8"].global_loads == {8: sg}              # packed_half4
    assert lines["9"].global_loads == {16: sg}             # uint4
    assert lines["10"].global_loads == {8: sg}             # float2
    assert lines["11"].global_loads == {4: sg}             # scalar, 64-byte lane stride
    assert lines["18"].global_loads == {4: 4 * sg}         # a fully unrolled loop: 4 sites
    assert lines["19"].global_stores == {16: sg}
    assert lines["21"].global_stores == {4: 2 * sg}        # #pragma unroll
    # coalescing: asked-for bytes / bytes of the 128-byte segments touched
    assert lines["7"].coalescing == 1.0 and lines["9"].coalescing == 1.0
    assert lines["11"].global_segments == 16 * sg and lines["11"].coalescing == 1 / 16
    assert lines["18"].coalescing == 1.0
    # threadgroup memory: lid*32 % 256 puts 8 distinct words of a simdgroup in bank 0
    assert lines["12"].tg_stores == {4: sg} and lines["12"].bank_conflict_cycles == 0
    assert lines["13"].tg_loads == {4: sg} and lines["13"].tg_stores == {4: sg}
    assert lines["13"].bank_conflict_cycles == 2 * 7 * sg
    assert lines["14"].barriers == N // GROUP
    assert lines["15"].tg_loads == {4: sg} and lines["15"].bank_conflict_cycles == 0
    # footprint: distinct 128-byte segments, read and written
    assert k.write_bytes == 4 * N * 4 + 2 * N * 4
    assert k.read_bytes == (4 * N * 4 + 4 * N * 2 + 4 * N * 4 + 2 * N * 4
                            + len({(8192 + 16 * i) * 4 // 128 for i in range(N)}) * 128
                            + 4 * N * 4)


def test_profiled_launches_give_the_same_bytes(lib):
    plain, profiled = _widths_args(), _widths_args()
    lib.widths(*plain, threads=N, group_size=GROUP)
    with sim.profile():
        lib.widths(*profiled, threads=N, group_size=GROUP)
    assert plain[1].tobytes() == profiled[1].tobytes()


def test_simd_ops_and_matrix_ops(lib):
    m = np.arange(192, dtype=np.float32) / 64
    with sim.profile() as prof:
        lib.simd_and_mma(m, threads=64, group_size=64)   # one group of 2 simdgroups
    rows = {key.split(":")[1]: row.counters for key, row in prof.kernels["simd_and_mma"].lines.items()}
    assert rows["25"].shuffles == 2 and rows["26"].shuffles == 2
    assert rows["27"].reductions == 2
    assert rows["29"].matrix_loads == 2 and rows["31"].matrix_stores == 2
    assert rows["30"].mma == 2
    total = prof.kernels["simd_and_mma"].total
    est = prof.kernels["simd_and_mma"].estimate("apple-m1")
    assert est["compute_s"] == pytest.approx(total.mma * 1024 / CHIPS["apple-m1"][2])


def test_launch_limit_and_estimate(lib):
    args = _widths_args()
    with sim.profile(launches_per_kernel=1) as prof:
        for _ in range(3):
            lib.widths(*args, threads=N, group_size=GROUP)
    stats = prof.kernels["widths"]
    assert stats.launches == 1 and len(prof.launches) == 1
    est = stats.estimate("apple-m4-max")
    assert est["memory_s"] == pytest.approx((stats.read_bytes + stats.write_bytes) / 546e9)
    assert est["seconds"] == max(est["memory_s"], est["compute_s"])
    report = prof.report()
    assert "ESTIMATE on Apple M4 Max" in report and "widths.metal:7" in report
    with pytest.raises(ValueError, match="unknown chip"):
        with sim.profile(chip="apple-m9"):
            pass
