"""Copies between host memory and the guarded staging mappings (msltrans/sim/staging.py):
large ones run on torch's threads when the dispatch may use more than one worker."""

import os

import numpy as np
import pytest
import torch

from msltrans.sim import staging

SCALE = """
#include <metal_stdlib>
using namespace metal;
kernel void scale(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    y[i] = x[i] * 2.0f + float(i & 1023u);
}
"""


@pytest.mark.parametrize(("threads", "free"), [("", 2), ("", 1), ("1", 2), ("2", 1)])
def test_copy_bytes_both_paths(monkeypatch, threads, free):
    calls = []
    real = staging.torch.frombuffer

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(staging.torch, "frombuffer", spy)
    monkeypatch.setattr(staging, "default_workers", lambda: free)   # the cores free now
    monkeypatch.setenv("MSLTRANS_SIM_THREADS", threads)
    rng = np.random.default_rng(0)
    for size in (staging.PARALLEL_COPY_BYTES - 1, staging.PARALLEL_COPY_BYTES + 3):
        src = rng.integers(0, 256, size, dtype=np.uint8)
        dst = np.zeros(size + 2, np.uint8)
        staging.copy_bytes(dst.ctypes.data + 1, src.ctypes.data, size)
        np.testing.assert_array_equal(dst[1:-1], src)
        assert dst[0] == 0 and dst[-1] == 0   # nothing outside the range
    # Only the large copy, and only when more than one worker may run (pinned, or by default
    # with another core free), uses torch.
    assert len(calls) == (2 if int(threads or free) > 1 else 0)


def test_default_workers_is_the_runtime_estimate():
    cores = len(os.sched_getaffinity(0))
    assert 1 <= staging.default_workers() <= cores


@pytest.mark.parametrize("threads", ["", "1"])
def test_large_buffers_round_trip(sim, monkeypatch, threads):
    monkeypatch.setenv("MSLTRANS_SIM_THREADS", threads)
    lib = sim.compile_shader(SCALE)
    n = (3 << 20) // 4 + 5                    # 3 MB and a bit: both copies are large
    base = torch.randn(n + 7, generator=torch.Generator().manual_seed(1))
    x = base[7:]                              # bound from its storage offset
    full = torch.full((n + 3,), float("nan"))
    y = full[3:]
    lib.scale(x, y, threads=n)
    want = x * 2.0 + (torch.arange(n) & 1023).float()
    assert torch.equal(y, want)
    assert torch.isnan(full[:3]).all()         # in front of the view: not bound, untouched
