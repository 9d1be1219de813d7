"""Atomics of the shim: an int histogram, float atomic add, CAS loops, threadgroup atomics."""

# ruff: noqa: E501 -- embedded MSL sources keep their own line structure

import numpy as np

from tests.support.shim import HEADER, compile_shader


def test_histogram_int_atomics():
    lib = compile_shader(
        HEADER
        + """
kernel void hist(device const uint* x [[buffer(0)]], device atomic_uint* bins [[buffer(1)]],
                 device atomic_int* mx [[buffer(2)]], threadgroup atomic_int* local_bins [[threadgroup(0)]],
                 uint gid [[thread_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
    if (tid < 16) atomic_store_explicit(&local_bins[tid], 0, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    atomic_fetch_add_explicit(&local_bins[x[gid] % 16], 1, memory_order_relaxed);
    atomic_fetch_max_explicit(mx, int(x[gid]), memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid < 16)
        atomic_fetch_add_explicit(&bins[tid], uint(atomic_load_explicit(&local_bins[tid], memory_order_relaxed)),
                                  memory_order_relaxed);
}
"""
    )
    rng = np.random.default_rng(2)
    x = rng.integers(0, 1000, 4096).astype(np.uint32)
    bins = np.zeros(16, np.uint32)
    mx = np.zeros(1, np.int32)
    lib.hist(x, bins, mx, threads=4096, group_size=256, threadgroup=[64])
    assert np.array_equal(bins, np.bincount(x % 16, minlength=16))
    assert mx[0] == x.max()


def test_float_atomic_add_and_cas_loop():
    lib = compile_shader(
        HEADER
        + """
kernel void fadd(device const float* x [[buffer(0)]], device atomic_float* total [[buffer(1)]],
                 device atomic_uint* hsum [[buffer(2)]], device atomic<int>* xchg [[buffer(3)]],
                 uint gid [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(total, x[gid], memory_order_relaxed);
    // half add emulated with a 32-bit CAS loop (what PyTorch's c10/metal does)
    uint old = atomic_load_explicit(hsum, memory_order_relaxed), desired;
    do {
        half2 h = as_type<half2>(old);
        h.x += half(1.0f);
        desired = as_type<uint>(h);
    } while (!atomic_compare_exchange_weak_explicit(hsum, &old, desired, memory_order_relaxed, memory_order_relaxed));
    atomic_exchange_explicit(xchg, int(gid), memory_order_relaxed);
}
"""
    )
    x = (np.arange(300, dtype=np.float32) * 0.25).astype(np.float32)
    total = np.zeros(1, np.float32)
    hsum = np.zeros(1, np.uint32)
    xchg = np.full(1, -1, np.int32)
    lib.fadd(x, total, hsum, xchg, threads=300, group_size=100)
    # threads run in order within a threadgroup and groups in order: the sequential float sum
    assert total[0] == np.add.accumulate(x)[-1]
    assert hsum.view(np.float16)[0] == np.float16(300)
    assert 0 <= xchg[0] < 300


def test_threadgroup_atomic_add():
    """Static and [[threadgroup(0)]] atomics in threadgroup memory (atomic_int: MSL 6.15.4.5
    allows atomic_float add only in device memory, tests/sim/test_language_rules.py)."""
    lib = compile_shader(
        HEADER
        + """
kernel void tg_add(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                   threadgroup atomic_int* dyn [[threadgroup(0)]],
                   uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                   uint group [[threadgroup_position_in_grid]]) {
    threadgroup atomic_int acc;                         // a static threadgroup declaration
    if (lid == 0) {
        atomic_store_explicit(&acc, 0, memory_order_relaxed);
        atomic_store_explicit(dyn, 100, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    int before = atomic_fetch_add_explicit(&acc, x[gid], memory_order_relaxed);
    atomic_fetch_add_explicit(dyn, 1, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[3 * gid] = before;
    if (lid == 0) {
        out[3 * gid + 1] = atomic_load_explicit(&acc, memory_order_relaxed);
        out[3 * gid + 2] = atomic_load_explicit(dyn, memory_order_relaxed);
    }
}
"""
    )
    tg, groups = 64, 3
    x = (np.arange(tg * groups, dtype=np.int32) * 37 % 101).astype(np.int32)
    out = np.zeros((tg * groups, 3), np.int32)
    lib.tg_add(x, out, threads=tg * groups, group_size=tg, threadgroup=[16])
    for g in range(groups):
        xs = x[g * tg:(g + 1) * tg].astype(np.int64)
        # threads of a group run in order under the default schedule: exclusive prefix sums
        partial = np.concatenate([[0], np.add.accumulate(xs)[:-1]])
        np.testing.assert_array_equal(out[g * tg:(g + 1) * tg, 0], partial)
        assert out[g * tg, 1] == xs.sum()
        assert out[g * tg, 2] == 100 + tg
