"""Lanes mode (msltrans/sim/lanes, runtime lanes.c): a simdgroup run as one function.

Every kernel here runs twice on the same inputs, in lanes mode and on fibers
(MSLTRANS_SIM_LANES=fibers: one fiber per thread, the reference model), and must give the
same bytes, the same errors and the same faulting thread."""

from __future__ import annotations

import re

import numpy as np
import pytest

import msltrans.sim as sim
from msltrans.sim.compiler import find_compiler
from msltrans.sim.lanes.plugin import plugin

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"

pytestmark = pytest.mark.skipif(plugin(find_compiler()) is None,
                                reason="LLVM's C++ headers (llvm-19-dev) are not installed")

# Values and a private array live across SIMD ops and barriers; a loop with a shuffle in it;
# threadgroup memory between simdgroups; lanes that return before the rendezvous.
BLOCK_REDUCE = HEADER + """
kernel void block_reduce(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         device uint* flags [[buffer(2)]],
                         threadgroup float* partial [[threadgroup(0)]],
                         uint gid [[thread_position_in_grid]],
                         uint lid [[thread_index_in_threadgroup]],
                         uint lane [[thread_index_in_simdgroup]],
                         uint sg [[simdgroup_index_in_threadgroup]],
                         uint sgs [[simdgroups_per_threadgroup]]) {
    float v = x[gid];
    float keep[12];
    for (int i = 0; i < 12; ++i) keep[i] = v * float(i + 1) + float(lane);
    float bf = v;                   // (lanes missing in a partial simdgroup read NaN)
    for (ushort d = 16; d > 0; d >>= 1) bf += simd_shuffle_xor(bf, d);
    float s = simd_sum(v);
    float m = simd_max(v + keep[lane % 12]);
    uint ballot_bits = uint(static_cast<ulong>(simd_ballot(v > 0.5f)));
    if (lane == 0) partial[sg] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float total = 0.0f;
    for (uint i = 0; i < sgs; ++i) total += partial[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lane % 7 == 3) {            // these lanes take no part in what follows
        out[gid * 4] = total;
        out[gid * 4 + 1] = m;
        out[gid * 4 + 2] = keep[(gid * 5) % 12];
        out[gid * 4 + 3] = bf;
        flags[gid] = ballot_bits;
        return;
    }
    float after = simd_sum(keep[(lane * 3) % 12]);
    float up = simd_shuffle_up(after + v, ushort(1));
    out[gid * 4] = total;
    out[gid * 4 + 1] = m + up;
    out[gid * 4 + 2] = keep[(gid * 5) % 12];
    out[gid * 4 + 3] = after;
    flags[gid] = ballot_bits ^ uint(static_cast<ulong>(simd_ballot(true)));
}
"""

def _both(monkeypatch, run):
    """run() on fibers and in lanes mode: their results."""
    monkeypatch.setenv("MSLTRANS_SIM_LANES", "fibers")
    fibers = run()
    monkeypatch.delenv("MSLTRANS_SIM_LANES")
    lanes = run()
    return fibers, lanes


@pytest.mark.parametrize("schedule", ["forward", "reverse", "shuffle"])
@pytest.mark.parametrize("threads,group", [(512, 256), (300, 100), (40, 40)])
def test_lanes_match_fibers(monkeypatch, schedule, threads, group):
    lib = sim.compile_shader(BLOCK_REDUCE, name="lanes_block_reduce.metal")
    kernel = lib.block_reduce
    assert kernel.lanes, "the lanes pass made no simdgroup entry for this kernel"
    x = np.random.default_rng(threads + group).random(threads, dtype=np.float32)

    def run():
        out = np.full(threads * 4, np.nan, np.float32)
        flags = np.zeros(threads, np.uint32)
        n_sg = (group + 31) // 32
        kernel(x, out, flags, threads=threads, group_size=group,
               threadgroup_memory=[4 * n_sg], schedule=schedule, seed=7)
        return out, flags

    (out_f, flags_f), (out_l, flags_l) = _both(monkeypatch, run)
    # (a shuffle from a lane that returned reads NaN: the same NaN in both models)
    assert not np.isnan(out_f.reshape(-1, 4)[:, [0, 2]]).any()
    assert out_l.tobytes() == out_f.tobytes()
    assert flags_l.tobytes() == flags_f.tobytes()
    # And against a float64 model of the parts that do not depend on summation order.
    lanes = np.arange(threads) % group % 32
    keep = x[:, None].astype(np.float64) * np.arange(1, 13) + lanes[:, None]
    np.testing.assert_allclose(out_l.reshape(-1, 4)[:, 2],
                               keep[np.arange(threads), (np.arange(threads) * 5) % 12],
                               rtol=1e-6)


ATOMIC_ORDER = HEADER + """
kernel void order(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                  uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]]) {
    threadgroup atomic_uint acc;   // MSL 6.15.4.5: no atomic_float add in threadgroup memory
    if (lid == 0) atomic_store_explicit(&acc, as_type<uint>(0.0f), memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // A float add by compare-exchange: the order of the adds shows in the sum's bytes.
    uint seen = atomic_load_explicit(&acc, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(
            &acc, &seen, as_type<uint>(as_type<float>(seen) + x[gid]),
            memory_order_relaxed, memory_order_relaxed)) {}
    out[gid] = as_type<float>(seen);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid] += simd_sum(x[gid]);
}
"""


def test_lanes_keep_the_thread_order_after_a_barrier(monkeypatch):
    # After a threadgroup barrier the per-thread scheduler starts a new pass at thread 0;
    # lanes mode must too (here float atomics make the order visible in the bytes).
    lib = sim.compile_shader(ATOMIC_ORDER, name="lanes_order.metal")
    x = (np.arange(192, dtype=np.float32) * 0.37).astype(np.float32)

    def run():
        out = np.zeros(192, np.float32)
        lib.order(x, out, threads=192, group_size=96)
        return out

    fibers, lanes = _both(monkeypatch, run)
    assert lanes.tobytes() == fibers.tobytes()


ERRORS = HEADER + """
kernel void divergent(device float* out [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lane < 8) out[lane] = simd_sum(1.0f);
    else out[lane] = simd_max(2.0f);
}
kernel void early_return(device float* out [[buffer(0)]],
                         uint lid [[thread_index_in_threadgroup]]) {
    out[lid] = simd_sum(1.0f);
    if (lid == 40) return;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[lid] += 1.0f;
}
kernel void out_of_bounds(device float* out [[buffer(0)]],
                          uint lid [[thread_index_in_threadgroup]]) {
    float s = simd_sum(float(lid));
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint at = lid == 37 ? 1u << 28 : lid;
    out[at] = s;
}
"""


def _error(run):
    with pytest.raises(sim.SimError) as info:
        run()
    return info.value


def test_lanes_report_the_errors_fibers_report(monkeypatch):
    lib = sim.compile_shader(ERRORS, name="lanes_errors.metal")
    for name in ("divergent", "early_return", "out_of_bounds"):
        assert getattr(lib, name).lanes, name
    runs = [
        lambda: lib.divergent(np.zeros(64, np.float32), threads=64, group_size=64),
        lambda: lib.early_return(np.zeros(64, np.float32), threads=64, group_size=64),
        lambda: lib.out_of_bounds(np.zeros(64, np.float32), threads=64, group_size=64),
    ]
    for run in runs:
        fibers, lanes = _both(monkeypatch, lambda run=run: _error(run))
        assert type(lanes) is type(fibers)
        assert str(lanes) == str(fibers)
    # What they say.
    div = _error(runs[0])
    assert isinstance(div, sim.DivergenceError) and "divergent SIMD op in simdgroup 0" in str(div)
    assert "1 thread(s) already returned (first: thread 40)" in str(_error(runs[1]))
    assert _error(runs[2]).where.local == (37, 0, 0)


# simdgroup_matrix kernels in lanes mode (a multiply-accumulate is a rendezvous; a run of
# them with only address arithmetic between is computed once per simdgroup): the tiled
# shape of the dot templates (threadgroup staging, half operands widened to float through
# thread_elements(), 2x2 accumulator tiles, a run of four ops per k step), a half
# accumulator, a c operand that is another matrix, and lanes changing their elements
# between ops.
MATRIX_KERNELS = HEADER + """
#include <metal_simdgroup_matrix>
kernel void tiles(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                  device float* C [[buffer(2)]], device half* H [[buffer(3)]],
                  threadgroup half* sa [[threadgroup(0)]], threadgroup half* sb [[threadgroup(1)]],
                  uint lid [[thread_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                  uint sg [[simdgroup_index_in_threadgroup]],
                  uint2 tg [[threadgroup_position_in_grid]]) {
    // C[32x32 tile] = A[32x64] @ B[64x32] per threadgroup of 4 simdgroups (2x2 of 16x16).
    simdgroup_float8x8 acc[2][2];
    for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < 2; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_half8x8 hacc = make_filled_simdgroup_matrix<half, 8, 8>(half(0));
    uint r0 = (sg / 2) * 16, c0 = (sg % 2) * 16;
    for (uint k0 = 0; k0 < 64; k0 += 16) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint e = lid; e < 32 * 16; e += 128) {
            sa[(e / 16) * 16 + e % 16] = A[(tg.y * 32 + e / 16) * 64 + k0 + e % 16];
            sb[(e / 32) * 32 + e % 32] = B[(k0 + e / 32) * 64 + tg.x * 32 + e % 32];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint kk = 0; kk < 16; kk += 8) {
            simdgroup_float8x8 fa[2], fb[2];
            simdgroup_half8x8 ha, hb;
            for (uint i = 0; i < 2; ++i) {
                simdgroup_half8x8 h;
                simdgroup_load(h, sa, 16, ulong2(kk, r0 + i * 8));
                fa[i].thread_elements() = float2(h.thread_elements());
                if (i == 0) ha = h;
            }
            for (uint j = 0; j < 2; ++j) {
                simdgroup_half8x8 h;
                simdgroup_load(h, sb, 32, ulong2(c0 + j * 8, kk));
                fb[j].thread_elements() = float2(h.thread_elements());
            }
            simdgroup_load(hb, sb, 32, ulong2(c0 + 8, kk), true);
            for (uint i = 0; i < 2; ++i)
                for (uint j = 0; j < 2; ++j)
                    simdgroup_multiply_accumulate(acc[i][j], fa[i], fb[j], acc[i][j]);
            simdgroup_multiply_accumulate(hacc, ha, hb, hacc);
            acc[1][1].thread_elements() += float2(float(lane), 0.5f);   // per-lane change
            simdgroup_multiply_accumulate(acc[0][1], fa[1], fb[0], acc[1][1]);
        }
    }
    for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < 2; ++j)
            simdgroup_store(acc[i][j], C, 64,
                            ulong2(tg.x * 32 + c0 + j * 8, tg.y * 32 + r0 + i * 8));
    simdgroup_store(hacc, H, 8, ulong2(0, ((tg.y * 2 + tg.x) * 4 + sg) * 8));
}
template <typename T> void mma_here(thread simdgroup_float8x8& d, thread T& a) {
    simdgroup_multiply(d, a, a);
}
kernel void split_calls(device float* m [[buffer(0)]], ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a, d;
    simdgroup_load(a, m);
    if (lane < 16) mma_here(d, a);      // one source site, two calls
    else mma_here(d, a);
    simdgroup_store(d, m);
}
"""


@pytest.mark.parametrize("schedule", ["forward", "reverse", "shuffle"])
def test_matrix_kernels_in_lanes_mode_match_fibers(monkeypatch, schedule):
    lib = sim.compile_shader(MATRIX_KERNELS, name="lanes_matrix.metal")
    assert lib.tiles.lanes
    rng = np.random.default_rng(21)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)

    def run():
        c = np.full((64, 64), np.nan, np.float32)
        h = np.full((16 * 8, 8), np.nan, np.float16)
        lib.tiles(a, b, c, h, threads=(256, 2), group_size=(128, 1),
                  threadgroup_memory=[2 * 32 * 16, 2 * 16 * 32], schedule=schedule, seed=5)
        return c, h

    (c_f, h_f), (c_l, h_l) = _both(monkeypatch, run)
    assert c_l.tobytes() == c_f.tobytes() and h_l.tobytes() == h_f.tobytes()
    # The untouched accumulators against float64: acc[i][0] of each simdgroup (the first 8
    # of every 16 columns) is plain A @ B.
    want = a.astype(np.float64) @ b.astype(np.float64)
    plain = (np.arange(64) % 16) < 8
    np.testing.assert_allclose(c_l[:, plain], want[:, plain], rtol=1e-4, atol=1e-3)


def test_matrix_op_reached_through_different_calls_is_refused_in_lanes_mode(monkeypatch):
    """Fibers run each lane's call; lanes mode computes one call for the simdgroup, so lanes
    stopped at different calls of one source site are an error there, never a wrong result."""
    lib = sim.compile_shader(MATRIX_KERNELS, name="lanes_matrix.metal")
    m = np.random.default_rng(2).standard_normal(64).astype(np.float32)
    with pytest.raises(sim.DivergenceError,
                       match="through different calls .*MSLTRANS_SIM_LANES=fibers"):
        lib.split_calls(m.copy(), threads=32, group_size=32)
    monkeypatch.setenv("MSLTRANS_SIM_LANES", "fibers")
    out = m.copy()
    lib.split_calls(out, threads=32, group_size=32)
    want = m.reshape(8, 8).astype(np.float64) @ m.reshape(8, 8).astype(np.float64)
    np.testing.assert_allclose(out.reshape(8, 8), want, rtol=1e-5, atol=1e-5)


# Arrays of matrices indexed only by constants are split by the pass, one object per matrix
# (their lanes' elements adjacent: the op's packed path); q, indexed at run time once, stays
# one object (the strided path). The same products on both, with d aliasing c, a and b.
PACKED = HEADER + """
#include <metal_simdgroup_matrix>
template <typename T>
void products(device const T* x, device T* out, uint pick, vec<T, 2> add) {
    simdgroup_matrix<T, 8, 8> p[3], q[3];
    #pragma unroll
    for (uint i = 0; i < 3; ++i) {
        simdgroup_load(p[i], x + 64 * i);
        simdgroup_load(q[i], x + 64 * i);
    }
    p[0].thread_elements() += add;
    q[pick].thread_elements() += add;
    simdgroup_multiply_accumulate(p[2], p[0], p[1], p[2]);
    simdgroup_multiply_accumulate(q[2], q[0], q[1], q[2]);
    simdgroup_multiply_accumulate(p[0], p[0], p[1], p[2]);
    simdgroup_multiply_accumulate(q[0], q[0], q[1], q[2]);
    simdgroup_multiply_accumulate(p[1], p[0], p[1], p[2]);
    simdgroup_multiply_accumulate(q[1], q[0], q[1], q[2]);
    #pragma unroll
    for (uint i = 0; i < 3; ++i) {
        simdgroup_store(p[i], out + 64 * i);
        simdgroup_store(q[i], out + 192 + 64 * i);
    }
}
kernel void packed_float(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         constant uint& pick [[buffer(2)]],
                         ushort lane [[thread_index_in_simdgroup]]) {
    products(x, out, pick, float2(float(lane) * 0.25f, -0.5f));
}
kernel void packed_half(device const half* x [[buffer(0)]], device half* out [[buffer(1)]],
                        constant uint& pick [[buffer(2)]],
                        ushort lane [[thread_index_in_simdgroup]]) {
    products(x, out, pick, half2(float2(float(lane) * 0.25f, -0.5f)));
}
"""


def _lane_nudge() -> np.ndarray:
    """The matrix that `thread_elements() += (lane / 4, -0.5)` adds (Apple's lane layout)."""
    m = np.zeros((8, 8))
    for lane in range(32):
        row = (lane // 4 & 4) + (lane // 2) % 4
        col = (lane // 4 & 2) * 2 + (lane % 2) * 2
        m[row, col:col + 2] = (lane * 0.25, -0.5)
    return m


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-5), (np.float16, 2e-2)])
def test_packed_and_strided_products_agree(monkeypatch, dtype, rtol):
    lib = sim.compile_shader(PACKED, name="lanes_packed.metal")
    kernel = lib.packed_float if dtype == np.float32 else lib.packed_half
    assert kernel.lanes
    x = (np.random.default_rng(4).standard_normal(192) * 0.5).astype(dtype)

    def run():
        out = np.full(384, np.nan, dtype)
        kernel(x, out, np.array([0], np.uint32), threads=32, group_size=32)
        return out

    fibers, lanes = _both(monkeypatch, run)
    assert lanes.tobytes() == fibers.tobytes()
    assert lanes[:192].tobytes() == lanes[192:].tobytes()   # packed == strided, bit for bit
    # Against float64, rounding to the element type after each product.
    p = [x[64 * i:64 * (i + 1)].astype(np.float64).reshape(8, 8) for i in range(3)]
    p[0] = p[0] + _lane_nudge()
    p[0] = p[0].astype(dtype).astype(np.float64)
    for d in (2, 0, 1):
        p[d] = (p[0] @ p[1] + p[2]).astype(dtype).astype(np.float64)
    np.testing.assert_allclose(lanes[:192].astype(np.float64), np.concatenate(
        [m.ravel() for m in p]), rtol=rtol, atol=rtol)


# Lanes mode counts matrix loads/stores inline and adds them to the lane's count and site
# hash at its next rendezvous: the same uniformity errors as fibers, which count each one.
MATRIX_ERRORS = HEADER + """
#include <metal_simdgroup_matrix>
kernel void skips_a_load(device float* m [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a;
    simdgroup_load(a, m);
    if (lane != 5) simdgroup_load(a, m, 8, ulong2(0, 8));
    m[128 + lane] = simd_sum(1.0f);
}
kernel void other_site(device float* m [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a;
    if (lane < 16) simdgroup_load(a, m);
    else simdgroup_load(a, m, 8);
    simdgroup_store(a, m + 64);
    m[128 + lane] = simd_sum(1.0f);
}
kernel void partial(device float* m [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
    m[256 + lid] = simd_sum(1.0f);
    simdgroup_float8x8 a;
    simdgroup_load(a, m);
    simdgroup_store(a, m + 64);
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
kernel void after_a_product(device float* m [[buffer(0)]],
                            uint lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a, d;
    simdgroup_load(a, m);
    simdgroup_multiply(d, a, a);
    if (lane != 3) simdgroup_store(d, m + 64);
    m[256 + lane] = simd_sum(1.0f);
}
kernel void returns_early(device float* m [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a;
    simdgroup_load(a, m);
    m[128 + lane] = simd_sum(1.0f);
    if (lane == 9) return;
    simdgroup_store(a, m + 64);
}
"""


@pytest.mark.parametrize("name, group, message", [
    ("skips_a_load", 32, r"lane 0 executed 2 load\(s\)/store\(s\) \(last: simdgroup_load at "
                         r"lanes_matrix_errors.metal:8:20\) .* lane 5 executed 1 \(last: "
                         r"simdgroup_load at lanes_matrix_errors.metal:7:5\)"),
    ("other_site", 32, "divergent simdgroup_matrix ops in simdgroup 0"),
    ("partial", 48, "inactive lanes .* in a simdgroup of 16 lane"),
    # (a multiply-accumulate is a rendezvous in lanes mode: the load before it is checked
    # there, and the counts of what follows start after it)
    ("after_a_product", 32, r"lane 0 executed 1 load\(s\)/store\(s\) \(last: simdgroup_store"
                            r".*\) and 1 multiply-accumulate\(s\), lane 3 executed 0 \(last: "
                            r"none\) and 1;"),
    ("returns_early", 32, "divergent simdgroup_matrix ops in simdgroup 0"),
])
def test_matrix_uniformity_errors_match_fibers(monkeypatch, name, group, message):
    lib = sim.compile_shader(MATRIX_ERRORS, name="lanes_matrix_errors.metal")
    kernel = getattr(lib, name)
    assert kernel.lanes, name

    def run():
        return _error(lambda: kernel(np.zeros(512, np.float32), threads=group, group_size=group))

    fibers, lanes = _both(monkeypatch, run)
    assert type(lanes) is type(fibers) and lanes.where == fibers.where
    if name != "after_a_product":
        assert str(lanes) == str(fibers)
    assert re.search(message, str(lanes)), str(lanes)


MATRIX_AND_BIG = HEADER + """
kernel void matrix(device float* out [[buffer(0)]]) {
    simdgroup_float8x8 a(2.0f);
    simdgroup_store(a, out, 8);
}
kernel void big_private(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
    float big[2048];
    for (uint i = 0; i < 2048; ++i) big[i] = float(i ^ gid);
    float s = simd_sum(big[(gid * 37) % 2048]);
    out[gid] = s + big[(gid * 11) % 2048];
}
kernel void plain(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
    out[gid] = float(gid);
}
"""


def test_kernels_without_a_lanes_entry_and_large_frames_run():
    lib = sim.compile_shader(MATRIX_AND_BIG, name="lanes_refused.metal")
    # Matrix ops but no rendezvous, no rendezvous at all: no lanes entry. 32 copies of an
    # 8 KB array are over what lane 0's stack holds: the runtime gives the lanes entry room.
    assert not lib.matrix.lanes and not lib.plain.lanes
    assert lib.big_private.lanes
    out = np.zeros(64, np.float32)
    lib.matrix(out, threads=32, group_size=32)
    np.testing.assert_array_equal(out.reshape(8, 8), np.diag(np.full(8, 2.0, np.float32)))
    out = np.zeros(64, np.float32)
    lib.big_private(out, threads=64, group_size=64)
    gid = np.arange(64)
    picked = ((gid * 37) % 2048) ^ gid
    sums = np.concatenate([np.full(32, picked[:32].sum()), np.full(32, picked[32:].sum())])
    np.testing.assert_array_equal(out, sums + (((gid * 11) % 2048) ^ gid))


def test_the_setting_is_checked(monkeypatch):
    lib = sim.compile_shader(ATOMIC_ORDER, name="lanes_order.metal")
    x = np.ones(64, np.float32)
    monkeypatch.setenv("MSLTRANS_SIM_LANES", "simdgroups")
    with pytest.raises(ValueError, match="MSLTRANS_SIM_LANES='simdgroups'"):
        lib.order(x, np.zeros(64, np.float32), threads=64, group_size=64)
    for value in ("off", "on"):
        monkeypatch.setenv("MSLTRANS_SIM_LANES", value)
        out = np.zeros(64, np.float32)
        lib.order(x, out, threads=64, group_size=64)
        np.testing.assert_array_equal(out, np.arange(64) + 32)   # prefix count + simd_sum


def test_a_pass_that_does_not_build_leaves_kernels_on_fibers(monkeypatch, tmp_path):
    from msltrans.sim.lanes import plugin as lanes_plugin

    broken = tmp_path / "lanes_pass.cpp"
    broken.write_text("#error this pass does not build\n")
    monkeypatch.setattr(lanes_plugin, "SOURCE", broken)
    monkeypatch.setenv("MSLTRANS_SIM_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.warns(RuntimeWarning, match="building the lanes pass failed"):
        assert lanes_plugin.plugin(find_compiler()) is None
    assert lanes_plugin.available(find_compiler()) == ""   # no second warning, no key
    assert lanes_plugin.lanes_flags(find_compiler()) == ()


# Stores that nothing reads in lanes mode (objects.cpp, dropUnread): each thread_elements()
# fills a call-site record for the per-thread path's wait on a pending product, which lanes
# mode folds away, and each matrix has a handle only the per-thread path reads. Neither may
# stay in the lanes' frames, nor the site of a run (a constant): eight products read once
# each keep 9 matrices' elements (8 bytes per lane each), the sum's payload (4) and two
# values live across the sum (the buffer's address, 8, and the lane's index, 2).
FRAME_READS = HEADER + """
#include <metal_simdgroup_matrix>
kernel void eight_reads(device float* m [[buffer(0)]], ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a, d0, d1, d2, d3, d4, d5, d6, d7;
    simdgroup_load(a, m);
    simdgroup_multiply_accumulate(d0, a, a, a);
    simdgroup_multiply_accumulate(d1, a, a, a);
    simdgroup_multiply_accumulate(d2, a, a, a);
    simdgroup_multiply_accumulate(d3, a, a, a);
    simdgroup_multiply_accumulate(d4, a, a, a);
    simdgroup_multiply_accumulate(d5, a, a, a);
    simdgroup_multiply_accumulate(d6, a, a, a);
    simdgroup_multiply_accumulate(d7, a, a, a);
    float2 e = d0.thread_elements() + d1.thread_elements() + d2.thread_elements() +
               d3.thread_elements() + d4.thread_elements() + d5.thread_elements() +
               d6.thread_elements() + d7.thread_elements();
    m[64 + lane] = simd_sum(e.x + e.y);
}
"""


def test_lanes_frames_keep_no_unread_records_or_handles(monkeypatch):
    lib = sim.compile_shader(FRAME_READS, name="lanes_frame_reads.metal")
    assert lib.eight_reads.lanes
    assert lib.eight_reads.lanes_frame_bytes == (9 * 8 + 4 + 8 + 2) * 32
    m = (np.arange(96, dtype=np.float32) % 7) / 4
    outs = []
    for mode in ("fibers", "lanes"):
        monkeypatch.setenv("MSLTRANS_SIM_LANES", mode)
        x = m.copy()
        lib.eight_reads(x, threads=32, group_size=32)
        outs.append(x[64:])
    np.testing.assert_array_equal(outs[0], outs[1])
    # Each lane: eight times the sum of A @ A + A over all 64 elements (float64 model; the
    # products and sums of these quarters are exact in float).
    a = m[:64].astype(np.float64).reshape(8, 8)
    np.testing.assert_array_equal(outs[1], np.full(32, 8 * (a @ a + a).sum()))
