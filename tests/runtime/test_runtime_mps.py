"""The Apple-GPU engine. Runs only where torch has MPS (a Mac); skipped elsewhere."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton

from msltrans.errors import MetalNonRecoverableError
from msltrans.runtime.mps import chip_slug, mps_available

needs_mps = pytest.mark.skipif(not mps_available(), reason="needs an Apple GPU (torch MPS)")


def test_chip_slug():
    assert chip_slug("Apple M2 Pro") == "apple-m2-pro"
    assert chip_slug("  Apple M3 Max (40-core) ") == "apple-m3-max-40-core"
    assert chip_slug("!!!") == "apple-gpu"


@pytest.fixture
def mps_driver():
    from triton.runtime.driver import driver

    active = driver.active
    if getattr(active, "engine_name", None) != "mps":
        pytest.skip("the active Metal driver is not on the mps engine")
    return active


@needs_mps
@pytest.mark.mps
def test_engine_compiles_once_and_dispatches_zero_copy():
    from msltrans.runtime.mps import MpsEngine

    src = """
    #include <metal_stdlib>
    using namespace metal;
    kernel void axpb(device float* x [[buffer(0)]], constant float& a [[buffer(1)]],
                     constant int& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
        if (int(i) < n) x[i] = x[i] * a + 1.0f;
    }
    """
    engine = MpsEngine()
    fn = engine.load(src, "axpb")
    assert engine.load(src, "axpb") is not None and engine.libraries.compiles == 1
    base = torch.arange(300, dtype=torch.float32, device="mps")
    view = base[100:]  # storage offset: must bind at the view, without a copy
    fn(view, 2.0, 150, threads=(256, 1, 1), group_size=(128, 1, 1), arg_casts={2: "int32"})
    engine.synchronize()
    got = base.cpu().numpy()
    want = np.arange(300, dtype=np.float32)
    want[100:250] = want[100:250] * 2 + 1
    assert got.tobytes() == want.tobytes()


@needs_mps
@pytest.mark.mps
def test_vector_add_on_mps(mps_driver):
    from tests.support.kernels import vadd_kernel

    for n, block in [(1, 128), (1000, 256), (98432, 1024)]:
        x = torch.rand(n, device="mps")
        y = torch.rand(n, device="mps")
        out = torch.empty_like(x)
        vadd_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
        assert out.cpu().numpy().tobytes() == (x.cpu().numpy() + y.cpu().numpy()).tobytes()


@needs_mps
@pytest.mark.mps
def test_cpu_tensor_refused_on_mps(mps_driver):
    from tests.support.kernels import vadd_kernel

    x = torch.rand(8)
    with pytest.raises(MetalNonRecoverableError, match="tensor on 'cpu'.*'mps'"):
        vadd_kernel[(1,)](x, x, x, 8, BLOCK=32)


@needs_mps
@pytest.mark.mps
def test_benchmarker_on_mps(mps_driver):
    x = torch.rand(1 << 20, device="mps")
    ms = mps_driver.get_benchmarker()(lambda: x.mul_(1.0), warmup=5, rep=20)
    assert 0 < ms < 100
