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
