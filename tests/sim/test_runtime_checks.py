"""What the simulator catches that a GPU silently does wrong: each check must fire, name
the kernel / thread / buffer / offset / line, and never crash or hang the process."""

from __future__ import annotations

import numpy as np
import pytest

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"

OOB = HEADER + """
kernel void shifted_copy(device const float* src [[buffer(0)]], device float* dst [[buffer(1)]],
                         constant int& shift [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    dst[i + shift] = src[i];
}
kernel void shifted_read(device const float* src [[buffer(0)]], device float* dst [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    dst[i] = src[i + 1];
}
kernel void signed_copy(device const float* src [[buffer(0)]], device float* dst [[buffer(1)]],
                        constant int& shift [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    dst[int(i) + shift] = src[i];
}
"""

MISSING_BARRIER = HEADER + """
kernel void rotate(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                   uint lid [[thread_position_in_threadgroup]],
                   uint n [[threads_per_threadgroup]]) {
    threadgroup float tile[64];
    tile[lid] = x[lid];
    // missing threadgroup_barrier here
    out[lid] = tile[(lid + 1) % n];
}
"""

DIVERGENT = HEADER + """
kernel void early_exit(device float* out [[buffer(0)]],
                       uint lid [[thread_position_in_threadgroup]]) {
    if (lid >= 16) return;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[lid] = 1.0f;
}
kernel void two_barriers(device float* out [[buffer(0)]],
                         uint lid [[thread_position_in_threadgroup]]) {
    if (lid % 2) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    } else {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    out[lid] = 1.0f;
}
"""

BIG_TG = HEADER + """
kernel void too_much(device float* out [[buffer(0)]], uint lid [[thread_position_in_threadgroup]]) {
    threadgroup float a[4096];
    threadgroup float b[4096], c[64];
    a[lid] = 1.0f; b[lid] = 2.0f; c[lid] = 3.0f;
    out[lid] = a[lid] + b[lid] + c[lid];
}
"""

RECURSION = HEADER + """
uint depth(uint n, thread uint* trail) {
    uint local_copy[64];
    for (uint k = 0; k < 64; k++) local_copy[k] = trail[k] + n;
    if (n == 0) return local_copy[n % 64];
    return depth(n - 1, local_copy) + local_copy[(n * 7) % 64];
}
kernel void recurse(device uint* out [[buffer(0)]], constant uint& n [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
    uint trail[64] = {0};
    out[i] = depth(n, trail);
}
"""

# One frame of COUNT floats: a register-heavy kernel's frame (the register-path tt.dot of
# tutorial 06 at 128x64 tiles on 4 warps, head dim 256, needs 190 KB).
BIG_FRAME = HEADER + """
kernel void big_frame(device float* out [[buffer(0)]], constant uint& n [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    float a[COUNT];
    for (uint k = 0; k < COUNT; k++) a[k] = float(k ^ i);
    out[i] = a[(i * 7919u + n) % COUNT];
}
"""

DIVIDE = HEADER + """
kernel void divide(device int* x [[buffer(0)]], device const int* y [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
    x[i] = x[i] / y[i];
}
"""

DYNAMIC_TG = HEADER + """
kernel void reverse_in_group(device float* x [[buffer(0)]],
                             threadgroup float* scratch [[threadgroup(0)]],
                             uint lid [[thread_position_in_threadgroup]],
                             uint n [[threads_per_threadgroup]],
                             uint gid [[thread_position_in_grid]]) {
    scratch[lid] = x[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    x[gid] = scratch[n - 1 - lid];
}
"""


def test_out_of_bounds_write_names_buffer_and_offset(sim):
    lib = sim.compile_shader(OOB, name="oob.metal")
    src = np.ones(64, dtype=np.float32)
    dst = np.zeros(64, dtype=np.float32)
    with pytest.raises(sim.OutOfBoundsError) as info:
        lib.shifted_copy(src, dst, 1, threads=64, group_size=32, arg_casts={2: "int32"})
    error = info.value
    assert error.buffer_index == 1 and error.param == "dst"
    assert error.offset == 64 * 4 and error.is_write is True
    assert error.where.group == (1, 0, 0) and error.where.local == (31, 0, 0)
    assert "oob.metal:6:" in str(error)       # the line of `dst[i + shift] = src[i];`
    # The staging copy went back: every in-bounds write landed.
    np.testing.assert_array_equal(dst[1:], 1.0)


def test_out_of_bounds_read(sim):
    lib = sim.compile_shader(OOB, name="oob.metal")
    src = np.ones(30, dtype=np.float32)    # 120 bytes: 8-byte staging alignment still faults
    dst = np.zeros(30, dtype=np.float32)
    with pytest.raises(sim.OutOfBoundsError) as info:
        lib.shifted_read(src, dst, threads=30)
    assert info.value.param == "src" and info.value.is_write is False
    assert info.value.offset == 120 and info.value.where.local == (29, 0, 0)


def test_negative_offset_is_out_of_bounds(sim):
    lib = sim.compile_shader(OOB, name="oob.metal")
    src = np.ones(4096, dtype=np.float32)
    dst = np.zeros(4096, dtype=np.float32)
    with pytest.raises(sim.OutOfBoundsError) as info:
        lib.signed_copy(src, dst, -1, threads=1, arg_casts={2: "int32"})
    assert info.value.param == "dst" and info.value.offset == -4


def test_double_is_rejected_at_compile_time(sim):
    source = HEADER + """
kernel void uses_double(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    double wide = out[i];
    out[i] = float(wide * 2);
}
"""
    with pytest.raises(sim.CompileError) as info:
        sim.compile_shader(source, name="fp64.metal")
    message = str(info.value)
    assert "fp64.metal:5:5" in message and "Metal has no `double`" in message
    assert "reproduce with" in message


def test_missing_barrier_is_flagged_by_race_check(sim):
    lib = sim.compile_shader(MISSING_BARRIER)
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, dtype=np.float32)
    with pytest.raises(sim.RaceError) as info:
        sim.check_races(lib.rotate, x, out, threads=64, group_size=64)
    assert info.value.differences[0][:2] == (1, "out")
    assert np.all(out == 0)    # the caller's buffers are untouched
    fixed = MISSING_BARRIER.replace("// missing threadgroup_barrier here",
                                    "threadgroup_barrier(mem_flags::mem_threadgroup);")
    lib = sim.compile_shader(fixed)
    report = sim.check_races(lib.rotate, x, out, threads=64, group_size=64)
    assert "reverse" in report.schedules


def test_barrier_after_early_return_is_divergence(sim):
    lib = sim.compile_shader(DIVERGENT, name="div.metal")
    out = np.zeros(64, dtype=np.float32)
    with pytest.raises(sim.DivergenceError) as info:
        lib.early_exit(out, threads=64, group_size=64)
    message = str(info.value)
    assert "16 thread(s) wait at threadgroup_barrier at div.metal:7:5" in message
    assert "48 thread(s) already returned" in message


def test_barriers_at_different_sites_are_divergence(sim):
    lib = sim.compile_shader(DIVERGENT, name="div.metal")
    out = np.zeros(64, dtype=np.float32)
    sites = "div.metal:13.*div.metal:15|div.metal:15.*div.metal:13"
    with pytest.raises(sim.DivergenceError, match=sites):
        lib.two_barriers(out, threads=64, group_size=64)


def test_too_many_threads_per_group(sim):
    lib = sim.compile_shader(DIVERGENT)
    with pytest.raises(sim.LaunchError, match="1056 threads.*1024"):
        lib.early_exit(np.zeros(2048, np.float32), threads=(66, 32), group_size=(33, 32))


MAX_THREADS = HEADER + """
[[max_total_threads_per_threadgroup(64)]]
kernel void capped(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = float(i);
}
[[kernel, max_total_threads_per_threadgroup(2 * 64)]] void capped_list(
        device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = float(i);
}
"""


def test_dispatch_over_max_total_threads_per_threadgroup(sim):
    """MSL 5.1.3: the attribute caps the pipeline's threads per threadgroup; Metal refuses a
    dispatch over it, and so does the simulator (both spellings of the attribute)."""
    lib = sim.compile_shader(MAX_THREADS)
    assert lib.capped.max_threads_per_threadgroup == 64
    assert lib.capped_list.max_threads_per_threadgroup == 128
    out = np.zeros(256, np.float32)
    lib.capped(out, threads=256, group_size=64)
    np.testing.assert_array_equal(out, np.arange(256, dtype=np.float32))
    lib.capped_list(out, threads=256, group_size=128)
    lib.capped(out, threads=256)   # the default group size is the kernel's maximum
    with pytest.raises(sim.LaunchError, match=r"96 threads.*per_threadgroup\(64\)"):
        lib.capped(out, threads=192, group_size=96)
    with pytest.raises(sim.LaunchError, match=r"256 threads.*\(128\)"):
        lib.capped_list(out, threads=(16, 16), group_size=(16, 16))


def test_max_total_threads_over_1024_is_a_compile_error(sim):
    src = HEADER + """[[max_total_threads_per_threadgroup(2048)]]
kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = 1.0f;
}
"""
    with pytest.raises(sim.CompileError, match="2048.*1 to 1024"):
        sim.compile_shader(src)


def test_threadgroup_memory_over_32k(sim):
    lib = sim.compile_shader(BIG_TG)
    with pytest.raises(sim.ThreadgroupMemoryError, match="32768") as info:
        lib.too_much(np.zeros(64, np.float32), threads=64)
    assert "33024 bytes" in str(info.value)
    assert "kernel `too_much`, threadgroup (0, 0, 0), thread (0, 0, 0)" in str(info.value)


def test_dynamic_threadgroup_memory(sim):
    lib = sim.compile_shader(DYNAMIC_TG)
    x = np.arange(100, dtype=np.float32)
    lib.reverse_in_group(x, threads=100, group_size=50, threadgroup_memory={0: 50 * 4})
    np.testing.assert_array_equal(x, np.r_[np.arange(50)[::-1], np.arange(50, 100)[::-1]])
    with pytest.raises(sim.LaunchError, match="threadgroup_memory"):
        lib.reverse_in_group(x, threads=100, group_size=50)
    with pytest.raises(sim.ThreadgroupMemoryError):
        lib.reverse_in_group(x, threads=100, group_size=50, threadgroup_memory={0: 40000})


def test_stack_overflow_is_reported(sim):
    """Recursion, the classic way to overflow, is refused at compile time (the pipeline's
    call stack depth cannot be raised through torch: tests/sim/test_language_rules.py); a
    frame over the 448 KB stack overflows (in the kernel's prologue), reported with the
    thread."""
    with pytest.raises(sim.CompileError, match="a recursive call"):
        sim.compile_shader(RECURSION)
    count = 600 * 1024 // 4
    lib = sim.compile_shader(BIG_FRAME.replace("COUNT", str(count)))
    out = np.zeros(4, dtype=np.float32)
    with pytest.raises(sim.StackOverflowError, match="stack overflow") as info:
        lib.big_frame(out, 5, threads=4, arg_casts={1: "int32"})
    assert "kernel `big_frame`, threadgroup (0, 0, 0), thread (" in str(info.value)


@pytest.mark.parametrize("kib", [300, 600])
def test_large_frames_run_or_overflow_into_the_guard(sim, kib):
    """A 300 KB frame fits the 448 KB fiber stack and computes; a 600 KB one is reported as
    a stack overflow: kernels are built with stack-clash probes, so a frame larger than the
    64 KB guard touches the guard page first instead of writing into another fiber's stack
    (the threads' results below would then be silently wrong)."""
    count = kib * 1024 // 4
    lib = sim.compile_shader(BIG_FRAME.replace("COUNT", str(count)))
    out = np.full(64, np.nan, dtype=np.float32)
    if kib == 300:
        lib.big_frame(out, 5, threads=64, group_size=32, arg_casts={1: "int32"})
        want = [float(((i * 7919 + 5) % count) ^ i) for i in range(64)]
        assert out.tolist() == want
    else:
        with pytest.raises(sim.StackOverflowError, match="448 KB per thread"):
            lib.big_frame(out, 5, threads=64, group_size=32, arg_casts={1: "int32"})


def test_integer_division_by_zero_is_reported(sim):
    lib = sim.compile_shader(DIVIDE)
    x = np.full(8, 10, dtype=np.int32)
    y = np.array([1, 2, 5, 0, 1, 1, 1, 1], dtype=np.int32)
    with pytest.raises(sim.DivisionTrapError) as info:
        lib.divide(x, y, threads=8)
    assert info.value.where.local == (3, 0, 0)


def test_simulator_survives_errors(sim):
    """After faults and divergence the runtime still runs kernels correctly."""
    lib = sim.compile_shader(MISSING_BARRIER.replace(
        "// missing threadgroup_barrier here", "threadgroup_barrier(mem_flags::mem_threadgroup);"))
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, dtype=np.float32)
    lib.rotate(x, out, threads=64, group_size=64)
    np.testing.assert_array_equal(out, np.roll(x, -1))


SIMD = HEADER + """
kernel void lane_sums(device float* out [[buffer(0)]], uint lane [[thread_index_in_simdgroup]],
                      uint gid [[thread_position_in_grid]]) {
    float total = simd_sum(float(gid));
    float next = simd_shuffle_down(float(gid), ushort(1));
    out[gid * 2] = total;
    out[gid * 2 + 1] = next;
}
kernel void divergent_simd(device float* out [[buffer(0)]],
                           uint lane [[thread_index_in_simdgroup]]) {
    if (lane < 8) {
        out[lane] = simd_sum(1.0f);
    } else {
        out[lane] = simd_sum(2.0f);
    }
}
"""


def test_simd_ops_with_partial_simdgroup(sim):
    lib = sim.compile_shader(SIMD)
    out = np.zeros(2 * 40, dtype=np.float32)
    lib.lane_sums(out, threads=40, group_size=40)   # simdgroups of 32 and 8 lanes
    pairs = out.reshape(40, 2)
    gid = np.arange(40, dtype=np.float32)
    np.testing.assert_array_equal(pairs[:32, 0], gid[:32].sum())
    np.testing.assert_array_equal(pairs[32:, 0], gid[32:].sum())
    np.testing.assert_array_equal(pairs[:31, 1], gid[1:32])
    np.testing.assert_array_equal(pairs[32:39, 1], gid[33:40])


def test_simd_op_at_different_sites_is_divergence(sim):
    lib = sim.compile_shader(SIMD, name="simd.metal")
    with pytest.raises(sim.DivergenceError, match="divergent SIMD op in simdgroup 0"):
        lib.divergent_simd(np.zeros(32, np.float32), threads=32, group_size=32)


SPIN = HEADER + """
kernel void spin_on_neighbour(device atomic_uint* flag [[buffer(0)]],
                              uint lid [[thread_position_in_threadgroup]]) {
    if (lid == 0) {
        // Waits for thread 1, which never runs: thread 0 has not reached a barrier.
        while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {}
    } else {
        atomic_store_explicit(flag, 1u, memory_order_relaxed);
    }
}
"""


def test_spin_wait_times_out_instead_of_hanging(sim):
    lib = sim.compile_shader(SPIN)
    flag = np.zeros(1, dtype=np.uint32)
    with pytest.raises(sim.KernelTimeoutError, match="time limit"):
        lib.spin_on_neighbour(flag, threads=2, group_size=2, timeout=0.5)
    lib.spin_on_neighbour(flag, threads=2, group_size=2, schedule="reverse")
    assert flag[0] == 1


UNINITIALISED = HEADER + """
kernel void peek(device uint* f [[buffer(0)]], device int* i [[buffer(1)]],
                 device uint* u [[buffer(2)]], device ushort* h [[buffer(3)]],
                 device uint* d [[buffer(4)]], device int* nan_seen [[buffer(5)]],
                 threadgroup float* dyn [[threadgroup(0)]],
                 uint lid [[thread_position_in_threadgroup]],
                 uint gid [[thread_position_in_grid]]) {
    threadgroup float tf[8];
    threadgroup int ti[8];
    threadgroup uint tu[8];
    threadgroup half th[8];
    // Read before anyone writes, then dirty everything for the next threadgroup.
    f[gid] = as_type<uint>(tf[lid]); i[gid] = ti[lid]; u[gid] = tu[lid];
    h[gid] = as_type<ushort>(th[lid]); d[gid] = as_type<uint>(dyn[lid]);
    nan_seen[gid] = isnan(tf[lid]) + 2 * isnan(th[lid]) + 4 * isnan(dyn[lid]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    tf[lid] = 1.0f; ti[lid] = 2; tu[lid] = 3; th[lid] = half(4.0f); dyn[lid] = 5.0f;
}
"""


def test_uninitialised_threadgroup_memory_reads_all_ones(sim):
    # Documented fill: every byte 0xFF, i.e. NaN for float/half, -1 for int, UINT_MAX for uint;
    # refilled for each threadgroup, static declarations and [[threadgroup(i)]] alike.
    lib = sim.compile_shader(UNINITIALISED)
    n = 24   # three threadgroups of 8
    f, i, u, d = (np.zeros(n, np.uint32), np.zeros(n, np.int32), np.zeros(n, np.uint32),
                  np.zeros(n, np.uint32))
    h, seen = np.zeros(n, np.uint16), np.zeros(n, np.int32)
    lib.peek(f, i, u, h, d, seen, threads=n, group_size=8, threadgroup_memory={0: 32})
    assert np.all(f == 0xFFFFFFFF) and np.all(np.isnan(f.view(np.float32)))
    assert np.all(i == -1)
    assert np.all(u == 0xFFFFFFFF)
    assert np.all(h == 0xFFFF) and np.all(np.isnan(h.view(np.float16)))
    assert np.all(d == 0xFFFFFFFF)
    assert np.all(seen == 7)
