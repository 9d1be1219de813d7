"""Copies between host memory and the guarded staging mappings (msltrans/sim/staging.py):
large ones run on the simulator runtime's workers (msl_sim_copy)."""

import time

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


@pytest.mark.parametrize("threads", ["", "1", "2", "3"])
def test_copy_bytes_every_size(monkeypatch, threads):
    # Large copies run on the runtime's workers in 256 KB blocks (msl_sim_copy), small ones
    # as one memmove: every byte of the range lands, none outside it, for any worker count.
    monkeypatch.setenv("MSLTRANS_SIM_THREADS", threads)
    rng = np.random.default_rng(0)
    big = staging.PARALLEL_COPY_BYTES
    for size in (big - 1, big + 3, 5 * big + (256 << 10) + 7, 12 * big):
        src = rng.integers(0, 256, size, dtype=np.uint8)
        dst = np.zeros(size + 2, np.uint8)
        staging.copy_bytes(dst.ctypes.data + 1, src.ctypes.data, size)
        np.testing.assert_array_equal(dst[1:-1], src)
        assert dst[0] == 0 and dst[-1] == 0   # nothing outside the range


def test_a_copy_does_not_wait_for_a_late_worker(monkeypatch):
    monkeypatch.setenv("MSLTRANS_SIM_THREADS", "2")
    monkeypatch.setenv("MSLTRANS_SIM_DISPATCH_TEST", "late_ms=3000")
    src = np.random.default_rng(1).integers(0, 256, 16 << 20, dtype=np.uint8)
    dst = np.zeros_like(src)
    start = time.monotonic()
    staging.copy_bytes(dst.ctypes.data, src.ctypes.data, src.size)
    assert time.monotonic() - start < 2.0
    np.testing.assert_array_equal(dst, src)


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
