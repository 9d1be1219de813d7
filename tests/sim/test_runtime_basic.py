"""Running real MSL on the simulator: results against numpy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

VECTOR_ADD = """
#include <metal_stdlib>
using namespace metal;
kernel void vector_add(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                       device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = a[i] + b[i];
}
"""

REDUCE = """
#include <metal_stdlib>
using namespace metal;
#define BLOCK 256
kernel void block_sum(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                      constant uint& n [[buffer(2)]],
                      uint gid [[thread_position_in_grid]],
                      uint lid [[thread_position_in_threadgroup]],
                      uint group [[threadgroup_position_in_grid]]) {
    threadgroup float partial[BLOCK];
    partial[lid] = gid < n ? x[gid] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint stride = BLOCK / 2; stride > 0; stride /= 2) {
        if (lid < stride) partial[lid] += partial[lid + stride];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0) out[group] = partial[0];
}
"""

BUILTINS = """
#include <metal_stdlib>
using namespace metal;
kernel void where_am_i(device uint* out [[buffer(0)]],
                       uint3 pos [[thread_position_in_grid]],
                       ushort2 lpos [[thread_position_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]],
                       uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 grid [[threads_per_grid]]) {
    uint i = (pos.y * grid.x + pos.x) * 6;
    out[i + 0] = pos.x; out[i + 1] = pos.y; out[i + 2] = lpos.x;
    out[i + 3] = tpg.x; out[i + 4] = lane; out[i + 5] = sg;
}
"""

TEMPLATED = """
#include <metal_stdlib>
using namespace metal;
template <typename T>
kernel void scale(device T* x, constant float& factor, uint i [[thread_position_in_grid]]) {
    x[i] = T(float(x[i]) * factor);
}
template [[host_name("scale_float")]] [[kernel]]
void scale<float>(device float*, constant float&, uint);
template [[host_name("scale_int")]] [[kernel]] decltype(scale<int>) scale<int>;
"""

SCALARS = """
#include <metal_stdlib>
using namespace metal;
kernel void fill(device long* out [[buffer(0)]], constant long& a [[buffer(1)]],
                 constant int& b [[buffer(2)]], constant float& c [[buffer(3)]],
                 constant half& d [[buffer(4)]], constant long* list [[buffer(5)]],
                 uint i [[thread_position_in_grid]]) {
    out[0] = a; out[1] = b; out[2] = long(c * 4.0f); out[3] = long(float(d) * 8.0f);
    out[4] = list[0] + list[1] * 10;
}
"""


def test_vector_add(sim):
    lib = sim.compile_shader(VECTOR_ADD)
    rng = np.random.default_rng(0)
    a, b = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32)
    out = np.zeros_like(a)
    lib.vector_add(a, b, out, threads=1000, group_size=64)   # the last group is partial
    np.testing.assert_array_equal(out, a + b)
    assert lib.vector_add.max_threads_per_threadgroup == 1024
    assert lib.vector_add.thread_execution_width == 32


def test_threadgroup_reduction(sim):
    lib = sim.compile_shader(REDUCE)
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros(4, dtype=np.float32)
    lib.block_sum(x, out, 1000, threads=1024, group_size=256, arg_casts={2: "int32"})
    expected = [x[i * 256:(i + 1) * 256].sum() for i in range(4)]
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert lib.block_sum.static_thread_group_memory_length == 256 * 4
    sim.check_races(lib.block_sum, x, out, 1000, threads=1024, group_size=256,
                    arg_casts={2: "int32"})


def test_builtins_partial_last_group(sim):
    lib = sim.compile_shader(BUILTINS)
    width, height = 40, 3
    out = np.full(width * height * 6, 12345, dtype=np.uint32)
    lib.where_am_i(out, threads=(width, height), group_size=(16, 2))
    rows = out.reshape(height, width, 6)
    ys, xs = np.mgrid[0:height, 0:width]
    np.testing.assert_array_equal(rows[..., 0], xs)
    np.testing.assert_array_equal(rows[..., 1], ys)
    np.testing.assert_array_equal(rows[..., 2], xs % 16)
    # dispatchThreads: the edge groups are smaller (40 = 16 + 16 + 8; 3 = 2 + 1).
    np.testing.assert_array_equal(rows[..., 3], np.where(xs >= 32, 8, 16))
    group_w = np.where(xs >= 32, 8, 16)
    group_h = np.where(ys >= 2, 1, 2)
    linear = (ys % 2) * group_w + xs % 16
    del group_h
    np.testing.assert_array_equal(rows[..., 4], linear % 32)
    np.testing.assert_array_equal(rows[..., 5], linear // 32)


def test_template_instantiations(sim):
    lib = sim.compile_shader(TEMPLATED)
    assert set(dir(lib)) == {"scale_float", "scale_int"}
    x = np.arange(10, dtype=np.float32)
    lib.scale_float(x, 2.5, threads=10)
    np.testing.assert_array_equal(x, np.arange(10, dtype=np.float32) * 2.5)
    y = np.arange(10, dtype=np.int32)
    lib.scale_int(y, 3.0, threads=10, group_size=4)
    np.testing.assert_array_equal(y, np.arange(10) * 3)


def test_scalar_args_and_casts(sim):
    lib = sim.compile_shader(SCALARS)
    out = np.zeros(5, dtype=np.int64)
    lib.fill(out, 2**40 + 7, -5, 1.25, 0.375, [3, 4], threads=1,
             arg_casts={2: "int32", 4: "fp16"})
    assert out.tolist() == [2**40 + 7, -5, 5, 3, 43]


def test_torch_tensor_with_storage_offset(sim):
    lib = sim.compile_shader(VECTOR_ADD)
    base = torch.zeros(20)
    a = torch.arange(8, dtype=torch.float32)
    b = torch.full((8,), 0.5)
    out = base[4:12]      # storage offset 4: results must land at base[4:12]
    lib.vector_add(a, b, out, threads=8)
    assert torch.equal(base[4:12], a + b)
    assert torch.count_nonzero(base[:4]) == 0 and torch.count_nonzero(base[12:]) == 0


def test_aliased_arguments_share_memory(sim):
    lib = sim.compile_shader(VECTOR_ADD)
    x = np.arange(16, dtype=np.float32)
    lib.vector_add(x, x, x, threads=16)   # in place, as on a GPU
    np.testing.assert_array_equal(x, np.arange(16, dtype=np.float32) * 2)


def test_compile_cache_in_process(sim):
    import time

    first = sim.compile_shader(VECTOR_ADD)
    start = time.perf_counter()
    again = sim.compile_shader(VECTOR_ADD)
    assert again is first
    assert time.perf_counter() - start < 0.005


@pytest.mark.parametrize("schedule", ["forward", "reverse", "shuffle"])
def test_schedules_agree_on_race_free_kernel(sim, schedule):
    lib = sim.compile_shader(REDUCE)
    x = np.ones(512, dtype=np.float32)
    out = np.zeros(2, dtype=np.float32)
    lib.block_sum(x, out, 512, threads=512, group_size=256, arg_casts={2: "int32"},
                  schedule=schedule, seed=7)
    np.testing.assert_array_equal(out, [256, 256])


def test_non_contiguous_tensor_binds_storage_from_offset(sim):
    lib = sim.compile_shader(VECTOR_ADD)
    grid = torch.zeros(4, 6)
    column = grid[:, 2]            # stride 6, offset 2: the kernel sees storage from offset 2
    ones = torch.ones(4)
    lib.vector_add(ones, ones, column, threads=4)
    flat = grid.reshape(-1)
    assert flat[2:6].tolist() == [2.0, 2.0, 2.0, 2.0]   # contiguous from the offset, as on MPS
    assert torch.count_nonzero(flat) == 4


def test_race_check_on_torch_tensors_leaves_them_untouched(sim):
    lib = sim.compile_shader(REDUCE)
    x = torch.arange(512, dtype=torch.float32)
    out = torch.zeros(2)
    report = sim.check_races(lib.block_sum, x, out, 512, threads=512, group_size=256,
                             arg_casts={2: "int32"})
    assert report.kernel == "block_sum" and len(report.schedules) == 5
    assert torch.count_nonzero(out) == 0


def test_numpy_scalar_keeps_its_width(sim):
    lib = sim.compile_shader(REDUCE)
    x = np.ones(256, dtype=np.float32)
    out = np.zeros(1, dtype=np.float32)
    lib.block_sum(x, out, np.uint32(100), threads=256, group_size=256)
    assert out[0] == 100.0


GRID_BUILTINS = """
#include <metal_stdlib>
using namespace metal;
kernel void geometry(device uint* out [[buffer(0)]],
                     uint3 groups3 [[threadgroups_per_grid]],
                     uint2 groups2 [[threadgroups_per_grid]],
                     uint groups1 [[threadgroups_per_grid]],
                     uint width [[threads_per_simdgroup]],
                     ushort width16 [[threads_per_simdgroup]],
                     uint exec_width [[thread_execution_width]],
                     uint nsg [[simdgroups_per_threadgroup]],
                     uint2 pos [[thread_position_in_grid]], uint2 grid [[threads_per_grid]]) {
    device uint* o = out + (pos.y * grid.x + pos.x) * 9;
    o[0] = groups3.x; o[1] = groups3.y; o[2] = groups3.z; o[3] = groups2.x; o[4] = groups2.y;
    o[5] = groups1; o[6] = width; o[7] = width16 + exec_width; o[8] = nsg;
}
"""


def test_threadgroups_per_grid_and_threads_per_simdgroup(sim):
    lib = sim.compile_shader(GRID_BUILTINS)
    out = np.zeros((3, 70, 9), np.uint32)
    # dispatchThreads: 70 x 3 threads in 32 x 2 groups -> ceil: 3 x 2 groups, partial last ones
    lib.geometry(out, threads=(70, 3), group_size=(32, 2))
    assert np.all(out[..., :8] == [3, 2, 1, 3, 2, 3, 32, 64])
    # simdgroups_per_threadgroup counts the threads of each (possibly partial) group
    width = np.where(np.arange(70) < 64, 32, 6)
    height = np.where(np.arange(3) < 2, 2, 1)
    np.testing.assert_array_equal(out[..., 8], -(-(height[:, None] * width[None, :]) // 32))


SCALAR_TYPES = """
#include <metal_stdlib>
using namespace metal;
kernel void scalars(device const bool* flags [[buffer(0)]], device uchar* out_b [[buffer(1)]],
                    device ulong* out_s [[buffer(2)]], constant size_t& base [[buffer(3)]],
                    uint i [[thread_position_in_grid]]) {
    bool b = flags[i];
    bool c = !b && (i % 3 == 0);
    out_b[2 * i] = b ^ c;          // bool promotes to int
    out_b[2 * i + 1] = bool(i & 4) + sizeof(bool);
    size_t big = base + size_t(i) * 0x100000000ul;   // size_t is 64-bit in Metal
    out_s[2 * i] = big;
    out_s[2 * i + 1] = sizeof(size_t) * 100 + sizeof(ptrdiff_t);
}
"""


def test_bool_and_size_t_scalars(sim):
    lib = sim.compile_shader(SCALAR_TYPES)
    n = 16
    flags = (np.arange(n) % 2 == 1)
    out_b = np.zeros((n, 2), np.uint8)
    out_s = np.zeros((n, 2), np.uint64)
    lib.scalars(flags, out_b, out_s, 7, threads=n, group_size=8)
    i = np.arange(n)
    np.testing.assert_array_equal(out_b[:, 0], flags ^ (~flags & (i % 3 == 0)))
    np.testing.assert_array_equal(out_b[:, 1], ((i & 4) != 0) + 1)
    np.testing.assert_array_equal(out_s[:, 0], 7 + i.astype(np.uint64) * 2**32)
    assert np.all(out_s[:, 1] == 808)


SIMD_TICKETS = """
#include <metal_stdlib>
using namespace metal;
kernel void tickets(device atomic_uint* counter [[buffer(0)]], device uint* out [[buffer(1)]],
                    uint tid [[thread_index_in_threadgroup]]) {
    uint v = tid;
    for (uint step = 0; step < 3; ++step) {
        out[step * 64 + tid] = atomic_fetch_add_explicit(counter, 1u, memory_order_relaxed);
        v = simd_shuffle_xor(v, 1);
    }
}
"""


@pytest.mark.parametrize("schedule", ["forward", "reverse"])
def test_simd_ops_keep_running_one_simdgroup(sim, schedule):
    """After the last lane of a simdgroup reaches a SIMD op, the scheduler goes on with that
    simdgroup (its first lane in schedule order), not the threadgroup's next thread: a run
    of SIMD ops stays within 32 fibers' frames. Forward: simdgroup 0 takes tickets 0-95 (its
    three steps), simdgroup 1 96-191; reverse: the other way round."""
    lib = sim.compile_shader(SIMD_TICKETS)
    counter = np.zeros(1, dtype=np.uint32)
    out = np.zeros(3 * 64, dtype=np.uint32)
    lib.tickets(counter, out, threads=64, group_size=64, schedule=schedule)
    got = out.reshape(3, 2, 32)   # [step, simdgroup, lane]
    first, second = (0, 1) if schedule == "forward" else (1, 0)
    lanes = np.arange(32) if schedule == "forward" else np.arange(31, -1, -1)
    for step in range(3):
        np.testing.assert_array_equal(got[step, first], step * 32 + lanes)
        np.testing.assert_array_equal(got[step, second], 96 + step * 32 + lanes)
