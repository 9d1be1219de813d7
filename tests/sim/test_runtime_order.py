"""The order threads run in, and threads that start on the stack of one that returned.

A thread that has not run yet starts where the thread before it in schedule order returned,
on that thread's stack (sched.c's fiber_main): a kernel without rendezvous runs its group as
one loop. These tests pin what that must not change: the schedule's order, and threads that
start that way and then block at a SIMD op while others run."""

import numpy as np
import pytest

COUNTER = """
#include <metal_stdlib>
using namespace metal;
// Not atomic: each thread takes the next number, so out[] records the order threads ran in
// (threads run one at a time, each to its end when nothing makes it wait).
kernel void take(device uint* counter [[buffer(0)]], device uint* out [[buffer(1)]],
                 uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]]) {
    uint t = counter[0];
    out[gid] = t;
    counter[0] = t + 1u;
}

// Odd lanes return first; even lanes keep a 64-element local array across a simd_sum and a
// simdgroup_barrier (frames of threads started on a returned thread's stack must survive
// while other threads run).
kernel void odd_return(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                       uint gid [[thread_position_in_grid]],
                       uint lane [[thread_index_in_simdgroup]]) {
    if (lane & 1u) {
        out[gid] = -1.0f;
        return;
    }
    float keep[64];
    for (uint i = 0; i < 64u; ++i) keep[i] = x[gid] * float(i + 1u);
    float s = simd_sum(x[gid]);
    simdgroup_barrier(mem_flags::mem_none);
    float k = 0.0f;
    for (uint i = 0; i < 64u; ++i) k += keep[i];
    out[gid] = s + k;
}
"""


def test_threads_run_in_schedule_order_without_rendezvous(sim):
    lib = sim.compile_shader(COUNTER)
    n, group = 96, 48
    out = np.zeros(n, np.uint32)
    counter = np.zeros(1, np.uint32)
    lib.take(counter, out, threads=n, group_size=group)
    np.testing.assert_array_equal(out, np.arange(n))
    counter[:] = 0
    lib.take(counter, out, threads=n, group_size=group, schedule="reverse")
    want = np.concatenate([np.arange(g * group, (g + 1) * group)[::-1] for g in range(2)])
    np.testing.assert_array_equal(out, want)
    orders = []
    for seed in (1, 1, 2):
        counter[:] = 0
        lib.take(counter, out, threads=n, group_size=group, schedule="shuffle", seed=seed)
        for g in range(2):   # a permutation of each group's numbers
            np.testing.assert_array_equal(np.sort(out[g * group:(g + 1) * group]),
                                          np.arange(g * group, (g + 1) * group))
        orders.append(out.copy())
    np.testing.assert_array_equal(orders[0], orders[1])   # the seed decides
    assert not np.array_equal(orders[0], orders[2])
    assert not np.array_equal(orders[0], np.arange(n))


@pytest.mark.parametrize("schedule", ["forward", "reverse", "shuffle"])
def test_threads_started_on_a_returned_stack_block_and_resume(sim, schedule):
    lib = sim.compile_shader(COUNTER)
    rng = np.random.default_rng(7)
    n = 128
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    lib.odd_return(x, out, threads=n, group_size=64, schedule=schedule, seed=5)
    for s in range(n // 32):
        lanes = slice(32 * s, 32 * s + 32)
        even = x[lanes][::2]
        total = np.float32(0)
        for v in even:   # simd_sum: active lanes in increasing lane order
            total = np.float32(total + v)
        for i, v in enumerate(even):
            k = np.float32(0)
            for j in range(64):
                k = np.float32(k + np.float32(v * np.float32(j + 1)))
            assert out[32 * s + 2 * i] == np.float32(total + k), (s, i)
        np.testing.assert_array_equal(out[lanes][1::2], -1.0)
