"""How a dispatch hands its threadgroups to workers (msltrans/sim/runtime/dispatch.c): the
bytes of race-free kernels do not depend on the worker count, the claim size, the claim
order or a worker starting late (MSLTRANS_SIM_DISPATCH_TEST), in lanes mode and on fibers;
a late worker is not waited for, yet joins a launch that still has threadgroups; errors are
reported as the sequential order meets them."""

# ruff: noqa: E501 -- embedded MSL sources keep their own line structure

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from tests.support.msl_softmax import SOFTMAX_MSL

HEADER = "#include <metal_stdlib>\n#include <metal_simdgroup_matrix>\nusing namespace metal;\n"

KERNELS = HEADER + SOFTMAX_MSL + """// Row sums by a tree in threadgroup memory (256 threads a row, no atomics).
kernel void row_sum(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                    constant uint& cols [[buffer(2)]], uint row [[threadgroup_position_in_grid]],
                    uint lid [[thread_position_in_threadgroup]]) {
    threadgroup float acc[256];
    float s = 0.0f;
    for (uint c = lid; c < cols; c += 256) s += x[row * cols + c];
    acc[lid] = s;
    for (uint half_n = 128; half_n > 0; half_n /= 2) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (lid < half_n) acc[lid] += acc[lid + half_n];
    }
    if (lid == 0) out[row] = acc[0];
}
// C = A B, 16x16 tiles through threadgroup memory.
kernel void tiled_mm(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]],
                     device float* C [[buffer(2)]], constant uint& n [[buffer(3)]],
                     uint2 gid [[thread_position_in_grid]], uint2 lid [[thread_position_in_threadgroup]]) {
    threadgroup float a[16][16], b[16][16];
    float acc = 0.0f;
    for (uint k0 = 0; k0 < n; k0 += 16) {
        a[lid.y][lid.x] = A[gid.y * n + k0 + lid.x];
        b[lid.y][lid.x] = B[(k0 + lid.y) * n + gid.x];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < 16; k++) acc = fma(a[lid.y][k], b[k][lid.x], acc);
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    C[gid.y * n + gid.x] = acc;
}
// C = A B, one 8x8 tile per simdgroup (simdgroup_matrix: runs on fibers).
kernel void simd_mm(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]],
                    device float* C [[buffer(2)]], constant uint& n [[buffer(3)]],
                    uint2 tile [[threadgroup_position_in_grid]]) {
    simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint k = 0; k < n; k += 8) {
        simdgroup_matrix<float, 8, 8> a, b;
        simdgroup_load(a, A, n, ulong2(k, tile.y * 8));
        simdgroup_load(b, B, n, ulong2(tile.x * 8, k));
        simdgroup_multiply_accumulate(acc, a, b, acc);
    }
    simdgroup_store(acc, C, n, ulong2(tile.x * 8, tile.y * 8));
}
kernel void fault_in_group(device float* out [[buffer(0)]], constant uint& bad [[buffer(1)]],
                           uint g [[threadgroup_position_in_grid]],
                           uint i [[thread_position_in_grid]]) {
    out[i] = float(g);
    if (g >= bad) out[2048 + (i & 63)] = 1.0f;   // every group from `bad` on: past the end
}
kernel void barrier_in_group(device float* out [[buffer(0)]], constant uint& bad [[buffer(1)]],
                             uint g [[threadgroup_position_in_grid]],
                             uint lid [[thread_position_in_threadgroup]]) {
    if (g == bad && lid < 16) return;   // the others wait at the barrier for ever
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[g * 64 + lid] = 1.0f;
}
// Group 0 waits for group 1's flag: it completes only with group 1 on another worker.
kernel void handshake(device atomic_int* flag [[buffer(0)]], device int* out [[buffer(1)]],
                      uint g [[threadgroup_position_in_grid]]) {
    if (g == 1) {
        atomic_store_explicit(flag, 1, memory_order_relaxed);
        return;
    }
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {}
    out[0] = 7;
}
"""

# (MSLTRANS_SIM_THREADS, MSLTRANS_SIM_DISPATCH_TEST); the first is the reference.
ORDERS = [("1", ""), ("2", ""), ("2", "chunk=3"), ("3", "chunk=1,reverse"),
          ("2", "chunk=5,reverse"), ("4", "late_ms=3"), ("3", "caller_late_ms=30,chunk=2"),
          ("2", "no_prewake"), ("", "")]


@pytest.fixture(scope="module")
def lib(sim):
    return sim.compile_shader(KERNELS)


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(39)
    return {"x": rng.standard_normal((41, 300)).astype(np.float32),
            "a": rng.standard_normal((64, 64)).astype(np.float32),
            "b": rng.standard_normal((64, 64)).astype(np.float32)}


def _run_all(lib, data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    x, a, b = data["x"], data["a"], data["b"]
    out = {"softmax": np.full_like(x, np.nan), "row_sum": np.full(41, np.nan, np.float32),
           "tiled_mm": np.full_like(a, np.nan), "simd_mm": np.full_like(a, np.nan)}
    lib.softmax(x, out["softmax"], np.uint32(300), threads=41 * 128, group_size=128)
    lib.row_sum(x, out["row_sum"], np.uint32(300), threads=41 * 256, group_size=256)
    lib.tiled_mm(a, b, out["tiled_mm"], np.uint32(64), threads=(64, 64), group_size=(16, 16))
    lib.simd_mm(a, b, out["simd_mm"], np.uint32(64), threads=(8 * 32, 8), group_size=(32, 1))
    return out


def _set(monkeypatch, threads: str, hook: str) -> None:
    monkeypatch.setenv("MSLTRANS_SIM_THREADS", threads)
    monkeypatch.setenv("MSLTRANS_SIM_DISPATCH_TEST", hook)


@pytest.mark.parametrize("lanes", ["", "fibers"])
def test_same_bytes_for_any_worker_claim_and_order(lib, monkeypatch, lanes):
    monkeypatch.setenv("MSLTRANS_SIM_LANES", lanes)
    data = _inputs()
    results = []
    for threads, hook in ORDERS:
        _set(monkeypatch, threads, hook)
        results.append(_run_all(lib, data))
    ref = results[0]
    for (threads, hook), got in zip(ORDERS[1:], results[1:], strict=True):
        for name in ref:
            assert got[name].tobytes() == ref[name].tobytes(), (name, threads, hook)
    # and the reference computes what the kernels say (not two equal wrong runs)
    x, a, b = (data[k].astype(np.float64) for k in ("x", "a", "b"))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(ref["softmax"], e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(ref["row_sum"], x.sum(axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(ref["tiled_mm"], a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ref["simd_mm"], a @ b, rtol=1e-4, atol=1e-4)


def test_a_late_worker_is_not_waited_for(lib, monkeypatch):
    data = _inputs()
    _set(monkeypatch, "1", "")
    ref = _run_all(lib, data)
    _set(monkeypatch, "2", "late_ms=3000")   # the pool worker looks for work 3 s after waking
    start = time.monotonic()
    got = _run_all(lib, data)
    elapsed = time.monotonic() - start
    assert elapsed < 2.5, f"four dispatches took {elapsed:.2f} s: the late worker was waited for"
    for name in ref:
        assert got[name].tobytes() == ref[name].tobytes(), name


def test_a_late_worker_still_joins_an_open_launch(lib, monkeypatch):
    _set(monkeypatch, "2", "late_ms=300")
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    start = time.monotonic()
    lib.handshake(flag, out, threads=2, group_size=1, timeout=30.0)
    assert time.monotonic() - start >= 0.25   # group 1 ran on the worker that came late
    assert (flag[0], out[0]) == (1, 7)


def test_a_prewoken_worker_spins_a_while_then_sleeps(lib, monkeypatch):
    # msl_sim_prewake (called as a launch begins) wakes the sleeping pool workers the
    # dispatch will use; one woken for a dispatch that never comes spins ~2 ms, then sleeps.
    from msltrans.sim import native

    rt = native.runtime()
    _set(monkeypatch, "2", "")
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    # completes once pool worker 1 runs group 1 (after any late_ms wait a test before set)
    lib.handshake(flag, out, threads=2, group_size=1, timeout=30.0)
    time.sleep(0.2)                # it falls asleep
    spun = rt.msl_sim_prewake_spin_ns()
    rt.msl_sim_prewake(41)
    time.sleep(0.1)
    woken = (rt.msl_sim_prewake_spin_ns() - spun) / 1e6
    assert 1.0 < woken < 20.0, f"a prewoken worker spun {woken:.2f} ms"
    start = time.process_time()
    time.sleep(0.2)
    assert time.process_time() - start < 0.01   # asleep again
    spun = rt.msl_sim_prewake_spin_ns()
    _set(monkeypatch, "2", "no_prewake")
    rt.msl_sim_prewake(41)
    _set(monkeypatch, "2", "")
    rt.msl_sim_prewake(1)          # a one-group launch: nothing to wake
    _set(monkeypatch, "1", "")
    rt.msl_sim_prewake(41)         # a one-worker dispatch: nothing to wake
    time.sleep(0.1)
    assert rt.msl_sim_prewake_spin_ns() == spun


def _cpus(text: str) -> set[int]:
    """A Cpus_allowed_list ('0-3,6') as a set."""
    cpus: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_woken_worker_may_not_run_on_the_callers_cpu(lib, monkeypatch):
    # msl_sim_steer: before a sleeping pool thread is woken, its affinity becomes the
    # caller's CPUs less the one the caller runs on (a virtual machine's scheduler queued it
    # behind the caller otherwise).
    _set(monkeypatch, "2", "no_prewake")
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    lib.handshake(flag, out, threads=2, group_size=1, timeout=30.0)
    time.sleep(0.2)                # the pool worker sleeps
    lib.handshake(flag, out, threads=2, group_size=1, timeout=30.0)   # wakes it, steered
    allowed = os.sched_getaffinity(0)
    workers = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/comm") as comm:
            if comm.read().strip() != "mslsim-worker":
                continue
        with open(f"/proc/self/task/{task}/status") as status:
            line = next(x for x in status if x.startswith("Cpus_allowed_list:"))
        workers.append(_cpus(line.split(":", 1)[1].strip()))
    assert workers, "no pool thread named mslsim-worker"
    assert any(len(cpus) == len(allowed) - 1 and cpus < allowed for cpus in workers), workers


@pytest.mark.parametrize(("threads", "hook"), [("2", "chunk=3"), ("3", "chunk=7"),
                                               ("2", "late_ms=20"), ("4", "")])
def test_errors_are_those_of_the_sequential_order(lib, sim, monkeypatch, threads, hook):
    _set(monkeypatch, threads, hook)
    out = np.zeros(64 * 32, np.float32)
    with pytest.raises(sim.OutOfBoundsError) as err:
        lib.fault_in_group(out, np.uint32(5), threads=64 * 32, group_size=64)
    assert err.value.where.group == (5, 0, 0) and err.value.where.local == (0, 0, 0)
    assert np.array_equal(out[: 5 * 64], np.repeat(np.arange(5, dtype=np.float32), 64))


@pytest.mark.parametrize(("threads", "hook"), [("2", "chunk=2"), ("3", "reverse"), ("", "")])
def test_a_deadlocked_group_is_reported(lib, sim, monkeypatch, threads, hook):
    _set(monkeypatch, threads, hook)
    out = np.zeros(64 * 24, np.float32)
    with pytest.raises(sim.DivergenceError, match="16 thread.* already returned") as err:
        lib.barrier_in_group(out, np.uint32(9), threads=64 * 24, group_size=64)
    assert err.value.where.group == (9, 0, 0)
    out[:] = 0   # and the library runs the next dispatch on the same workers
    lib.barrier_in_group(out, np.uint32(99), threads=64 * 24, group_size=64)
    assert np.all(out == 1.0)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_worker_count_follows_the_threads_running(lib, monkeypatch):
    # The default worker count is the CPUs free: the caller alone when the machine's
    # runnable threads (here given by the hook instead of /proc/loadavg) fill every CPU.
    from msltrans.sim import library

    workers: list[int] = []
    dispatch = library.Kernel._dispatch

    def spy(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        report = dispatch(self, *args, **kwargs)
        workers.append(int(report.workers))
        return report

    monkeypatch.setattr(library.Kernel, "_dispatch", spy)
    cores = len(os.sched_getaffinity(0))
    data = _inputs()
    # (running counts this process's pool threads that spin for work, and the runtime takes
    # them out: an earlier test's pool of up to 3 threads must not bring it under the cores)
    for running in (cores + 8, 1):
        # the caller waits 0.3 s before its first claim: pool workers allowed in join
        _set(monkeypatch, "", f"running={running},caller_late_ms=300")
        workers.clear()
        lib.row_sum(data["x"], np.zeros(41, np.float32), np.uint32(300), threads=41 * 256,
                    group_size=256)
        if running > cores:
            assert workers == [1]
        else:
            assert workers[0] >= 2, workers


def test_bad_hook_is_a_launch_error(lib, sim, monkeypatch):
    for bad in ("chunk=0", "chunk=x", "sideways", "late_ms=", "reverse;chunk=2", "running=-1",
                "no_prewake=1"):
        _set(monkeypatch, "2", bad)
        with pytest.raises(sim.LaunchError, match="MSLTRANS_SIM_DISPATCH_TEST must be"):
            lib.row_sum(np.zeros(300, np.float32), np.zeros(1, np.float32), np.uint32(300),
                        threads=256, group_size=256)
