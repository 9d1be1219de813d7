"""MSLTRANS_SIM_CAS_SPURIOUS=N: every Nth weak compare-exchange of a dispatch fails spuriously.

Fibers never switch inside a CAS loop, so without the knob the simulator's weak
compare-exchange fails only on a mismatch and no retry path of a CAS loop ever runs. The
knob is read by the runtime at each dispatch: one cached library follows it.
"""

# ruff: noqa: E501 -- embedded MSL sources keep their own line structure

import numpy as np
import pytest

from tests.support.shim import HEADER, compile_shader

ATTEMPTS = 8
SOURCE = HEADER + """
// Each thread makes ATTEMPTS weak CASes on its own word, expecting the value it just loaded:
// nothing else writes the word, so every failure is spurious.
kernel void weak_cas(device atomic_uint* words [[buffer(0)]], device uint* fails [[buffer(1)]],
                     device uint* bad [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
    uint n = 0;
    for (uint k = 0; k < 8u; ++k) {
        uint before = atomic_load_explicit(&words[gid], memory_order_relaxed);
        uint expected = before;
        if (!atomic_compare_exchange_weak_explicit(&words[gid], &expected, before + 1u,
                                                   memory_order_relaxed, memory_order_relaxed)) {
            n++;
            // a failure must report the current value (unchanged: nothing was written)
            if (expected != before || atomic_load_explicit(&words[gid], memory_order_relaxed) != before)
                bad[gid] = 1u;
        }
    }
    fails[gid] = n;
}

// The same on threadgroup atomics, then device updates without a CAS (Metal has no strong
// compare-exchange), which are not counted.
kernel void tg_and_strong(device uint* fails [[buffer(0)]], device uint* strong_fails [[buffer(1)]],
                          device atomic_uint* words [[buffer(2)]],
                          threadgroup atomic_uint* tg [[threadgroup(0)]],
                          uint gid [[thread_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
    atomic_store_explicit(&tg[tid], 0u, memory_order_relaxed);
    uint n = 0, s = 0;
    for (uint k = 0; k < 8u; ++k) {
        uint expected = k;
        if (!atomic_compare_exchange_weak_explicit(&tg[tid], &expected, k + 1u,
                                                   memory_order_relaxed, memory_order_relaxed)) {
            n++;
            expected = k;  // retry until it succeeds: the retry path of a CAS loop
            while (!atomic_compare_exchange_weak_explicit(&tg[tid], &expected, k + 1u,
                                                          memory_order_relaxed, memory_order_relaxed)) {
                n++;
                expected = k;
            }
        }
        uint e2 = atomic_load_explicit(&words[gid], memory_order_relaxed);
        atomic_store_explicit(&words[gid], e2 + 1u, memory_order_relaxed);
        s += atomic_load_explicit(&words[gid], memory_order_relaxed) != e2 + 1u;
    }
    fails[gid] = n + 100u * (atomic_load_explicit(&tg[tid], memory_order_relaxed) != 8u);
    strong_fails[gid] = s;
}
"""


@pytest.fixture(scope="module")
def lib(sim):  # noqa: ANN001, ANN201 - the conftest's session fixture
    return compile_shader(SOURCE)


def _weak(lib, threads: int):  # noqa: ANN001, ANN202
    words = np.arange(threads, dtype=np.uint32) * 1000
    fails, bad = np.zeros(threads, np.uint32), np.zeros(threads, np.uint32)
    start = words.copy()
    lib.weak_cas(words, fails, bad, threads=threads, group_size=min(threads, 64))
    return start, words, fails, bad


def _expected_fails(threads: int, n: int) -> np.ndarray:
    # forward schedule, no barriers: thread t makes calls t*ATTEMPTS+1 .. (t+1)*ATTEMPTS
    calls = np.arange(1, threads * ATTEMPTS + 1).reshape(threads, ATTEMPTS)
    return (calls % n == 0).sum(axis=1).astype(np.uint32)


def test_off_by_default_never_fails(lib, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    monkeypatch.delenv("MSLTRANS_SIM_CAS_SPURIOUS", raising=False)
    start, words, fails, bad = _weak(lib, 96)
    assert not fails.any() and not bad.any()
    np.testing.assert_array_equal(words, start + ATTEMPTS)
    monkeypatch.setenv("MSLTRANS_SIM_CAS_SPURIOUS", "0")  # 0: off as well
    _, _, fails, _ = _weak(lib, 96)
    assert not fails.any()


@pytest.mark.parametrize("n", [2, 3, 7])
def test_every_nth_weak_cas_fails_without_writing(lib, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                                   n: int) -> None:
    monkeypatch.setenv("MSLTRANS_SIM_CAS_SPURIOUS", str(n))
    threads = 96
    for _ in range(2):  # the count restarts at every dispatch: the same pattern twice
        start, words, fails, bad = _weak(lib, threads)
        np.testing.assert_array_equal(fails, _expected_fails(threads, n))
        assert fails.sum() == threads * ATTEMPTS // n
        assert not bad.any()  # each failure reported the current value and wrote nothing
        np.testing.assert_array_equal(words, start + ATTEMPTS - fails)


def test_knob_read_at_run_time_by_one_cached_library(lib, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    # The same Library object (no recompilation) follows the variable from run to run.
    for value, any_fail in [("", False), ("3", True), ("", False), ("2", True)]:
        monkeypatch.setenv("MSLTRANS_SIM_CAS_SPURIOUS", value)
        _, _, fails, _ = _weak(lib, 32)
        assert bool(fails.any()) == any_fail, value


def test_threadgroup_weak_cas_fails_and_strong_never(lib, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("MSLTRANS_SIM_CAS_SPURIOUS", "2")
    threads = 64
    fails, strong = np.zeros(threads, np.uint32), np.zeros(threads, np.uint32)
    words = np.zeros(threads, np.uint32)
    lib.tg_and_strong(fails, strong, words, threads=threads, group_size=32, threadgroup=[128])
    # The plain device updates are not counted and never fail. Weak calls 2, 4, 6, ... fail, and each
    # failure is retried by an odd (succeeding) call: the very first step succeeds at once,
    # every later step fails once. No 100s: every threadgroup word reached 8.
    assert not strong.any() and (words == ATTEMPTS).all()
    assert fails.tolist() == [ATTEMPTS - 1] + [ATTEMPTS] * (threads - 1)


@pytest.mark.parametrize("value", ["1", "-2", "abc", "3x", "99999999999999"])
def test_invalid_values_refuse_the_launch(sim, lib, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                          value: str) -> None:
    monkeypatch.setenv("MSLTRANS_SIM_CAS_SPURIOUS", value)
    with pytest.raises(sim.LaunchError, match="MSLTRANS_SIM_CAS_SPURIOUS must be 0 .*N >= 2"):
        _weak(lib, 32)


def test_strong_compare_exchange_is_not_metal(sim) -> None:  # noqa: ANN001
    src = """#include <metal_stdlib>
using namespace metal;
kernel void k(device atomic_uint* w [[buffer(0)]]) {
    uint e = 0u;
    atomic_compare_exchange_strong_explicit(w, &e, 1u, memory_order_relaxed,
                                            memory_order_relaxed);
}
"""
    with pytest.raises(sim.CompileError, match="no atomic_compare_exchange_strong_explicit"):
        compile_shader(src)
