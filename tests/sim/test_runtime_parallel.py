"""Threadgroups of one dispatch on several worker threads (MSLTRANS_SIM_THREADS): the same
bytes for any worker count on race-free kernels, real device atomics, errors reported as
the sequential order meets them, and the dispatch time limit as a setting."""

from __future__ import annotations

import numpy as np
import pytest

import msltrans.sim as sim
from tests.support.msl_softmax import SOFTMAX_MSL

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"

KERNELS = HEADER + SOFTMAX_MSL + """kernel void count(device atomic_uint* counter [[buffer(0)]],
                  device atomic_float* fsum [[buffer(1)]], device atomic_int* hi [[buffer(2)]],
                  uint i [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(counter, 1u, memory_order_relaxed);
    atomic_fetch_add_explicit(fsum, 1.0f, memory_order_relaxed);   // exact below 2^24
    atomic_fetch_max_explicit(hi, int(i), memory_order_relaxed);
}
kernel void fault_in_group(device float* out [[buffer(0)]], constant uint& bad [[buffer(1)]],
                           uint g [[threadgroup_position_in_grid]],
                           uint i [[thread_position_in_grid]]) {
    out[i] = float(g);
    if (g >= bad) out[2048 + (i & 63)] = 1.0f;   // every group from `bad` on: past the end
}
kernel void spin(device atomic_int* flag [[buffer(0)]]) {
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {}
}
"""


@pytest.fixture(scope="module")
def lib():
    return sim.compile_shader(KERNELS)


@pytest.mark.parametrize("workers", ["1", "2", "3", "8"])
def test_same_bytes_for_any_worker_count(lib, monkeypatch, workers):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((37, 300)).astype(np.float32)
    monkeypatch.setenv("MSLTRANS_SIM_THREADS", "1")
    ref = np.zeros_like(x)
    lib.softmax(x, ref, np.uint32(300), threads=37 * 128, group_size=128)
    monkeypatch.setenv("MSLTRANS_SIM_THREADS", workers)
    y = np.full_like(x, np.nan)
    lib.softmax(x, y, np.uint32(300), threads=37 * 128, group_size=128)
    assert y.tobytes() == ref.tobytes()
    # and the kernel computes softmax (the comparison above is not between two wrong runs)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_device_atomics_are_atomic_across_workers(lib, monkeypatch):
    monkeypatch.setenv("MSLTRANS_SIM_THREADS", "4")
    n = 64 * 512
    counter, fsum = np.zeros(1, np.uint32), np.zeros(1, np.float32)
    hi = np.full(1, -1, np.int32)
    for _ in range(3):   # a lost update would show up as a smaller count
        counter[0], fsum[0], hi[0] = 0, 0, -1
        lib.count(counter, fsum, hi, threads=n, group_size=64)
        assert (counter[0], fsum[0], hi[0]) == (n, float(n), n - 1)


@pytest.mark.parametrize("workers", ["1", "2", "4"])
def test_errors_are_those_of_the_sequential_order(lib, monkeypatch, workers):
    monkeypatch.setenv("MSLTRANS_SIM_THREADS", workers)
    out = np.zeros(64 * 32, np.float32)
    with pytest.raises(sim.OutOfBoundsError) as err:
        lib.fault_in_group(out, np.uint32(5), threads=64 * 32, group_size=64)
    assert err.value.where.group == (5, 0, 0) and err.value.where.local == (0, 0, 0)
    # the writes of the groups before the faulting one landed, as in a sequential run
    assert np.array_equal(out[: 5 * 64], np.repeat(np.arange(5, dtype=np.float32), 64))


def test_bad_thread_count_is_a_launch_error(lib, monkeypatch):
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("MSLTRANS_SIM_THREADS", bad)
        with pytest.raises(sim.LaunchError, match="MSLTRANS_SIM_THREADS must be a positive"):
            lib.count(np.zeros(1, np.uint32), np.zeros(1, np.float32), np.zeros(1, np.int32),
                      threads=32, group_size=32)


def test_time_limit_from_the_environment_and_how_to_raise_it(lib, monkeypatch):
    flag = np.zeros(1, np.int32)
    monkeypatch.setenv("MSLTRANS_SIM_TIMEOUT", "0.3")
    with pytest.raises(sim.KernelTimeoutError) as err:
        lib.spin(flag, threads=1, group_size=1)
    message = str(err.value)
    assert "time limit of 0.3 s" in message
    assert "timeout=" in message and "MSLTRANS_SIM_TIMEOUT=<seconds>" in message
    # the keyword wins over the environment
    with pytest.raises(sim.KernelTimeoutError, match="time limit of 0.2 s"):
        lib.spin(flag, threads=1, group_size=1, timeout=0.2)
    monkeypatch.setenv("MSLTRANS_SIM_TIMEOUT", "soon")
    with pytest.raises(sim.LaunchError, match="MSLTRANS_SIM_TIMEOUT must be a number"):
        lib.spin(flag, threads=1, group_size=1)


def test_time_limit_stops_every_worker(lib, monkeypatch):
    monkeypatch.setenv("MSLTRANS_SIM_THREADS", "2")
    flag = np.zeros(1, np.int32)
    with pytest.raises(sim.KernelTimeoutError):
        lib.spin(flag, threads=4, group_size=1, timeout=0.3)   # both workers spin
    flag[0] = 1   # the library still works afterwards, on both workers
    lib.spin(flag, threads=4, group_size=1, timeout=5.0)


STALE = HEADER + """
kernel void poke_before(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    if (i == 0) out[-1] = 7.0f;   // in the staging padding: not caught (docs/sim-execution.md)
}
kernel void peek_before(device const float* x [[buffer(0)]], device float* y [[buffer(1)]]) {
    y[0] = x[-1];
}
"""


def test_reused_staging_reads_like_a_fresh_one():
    # Staging mappings are pooled across dispatches (msltrans/sim/staging.py): a buffer of the
    # same size reuses one, and what a kernel scribbled in its padding must not show through.
    lib = sim.compile_shader(STALE)
    for _ in range(3):
        lib.poke_before(np.zeros(100, np.float32), threads=32, group_size=32)
        y = np.full(1, np.nan, np.float32)
        lib.peek_before(np.zeros(100, np.float32), y, threads=1, group_size=1)
        assert y[0] == 0.0


def test_a_forked_child_dispatches(lib, monkeypatch):
    """The worker pool does not survive fork(): a child must start its own, and keep its
    time limit (multiprocessing's default start method on Linux forks)."""
    import os

    monkeypatch.setenv("MSLTRANS_SIM_THREADS", "2")
    flag = np.zeros(1, np.int32)
    lib.spin(np.ones(1, np.int32), threads=4, group_size=1)   # the pool is running
    pid = os.fork()
    if pid == 0:   # the child: exit status 0 only if both dispatches behave
        code = 1
        try:
            lib.count(np.zeros(1, np.uint32), np.zeros(1, np.float32), np.zeros(1, np.int32),
                      threads=256, group_size=32)
            try:
                lib.spin(flag, threads=2, group_size=1, timeout=0.3)
            except sim.KernelTimeoutError:
                code = 0
        finally:
            os._exit(code)
    import signal
    import time

    deadline = time.monotonic() + 60
    while True:   # a child stuck waiting for the parent's worker threads must not hang CI
        done, status = os.waitpid(pid, os.WNOHANG)
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if not done:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child's dispatch hung")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
