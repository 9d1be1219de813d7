"""The Mac path of the torch.compile route, as far as it goes without a Mac.

- The `mps` registrations (msltrans/inductor/mps_route.py) are made and undone, with
  `torch.backends.mps.is_available` mocked.
- With msltrans's driver on the MPS engine (through the simulator's `torch.mps` mirror,
  as tests/runtime/test_runtime_mps_via_sim.py does), Inductor's CPU kernels run on the
  simulator and the active driver stays the MPS one: a later hand-written launch still goes
  to the MPS engine.
- On a Mac with MPS, a model compiled for `mps` tensors runs on the GPU (skipped elsewhere).
"""

from __future__ import annotations

import pytest
import torch

import msltrans.inductor
import msltrans.runtime.mps as mps_runtime
import msltrans.sim
from msltrans._triton_compat import clear_device_caches
from msltrans.errors import MetalPointerDeviceError
from tests.support.kernels import vadd_kernel


def test_mps_registrations_are_made_and_undone(monkeypatch) -> None:
    from torch._dynamo import device_interface
    from torch._inductor.codegen import common
    from torch._inductor.codegen.triton import TritonScheduling
    from torch._inductor.runtime import benchmarking

    from msltrans.inductor import mps_route

    common.init_backend_registration()
    before = (common.get_scheduling_for_device("mps"),
              type(common.get_device_op_overrides("mps")),
              device_interface.get_interface_for_device("mps"),
              benchmarking._BENCHMARK_DISPATCH.get("mps"))
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    mps_route.enable()
    try:
        assert common.get_scheduling_for_device("mps") is TritonScheduling
        overrides = common.get_device_op_overrides("mps")
        scope: dict = {}
        exec(overrides.import_get_raw_stream_as("get_raw_stream"), scope)  # noqa: S102
        assert scope["get_raw_stream"](0) == 0
        assert overrides.synchronize() == "torch.mps.synchronize()"
        assert overrides.device_guard(0) == "torch._ops.contextlib.nullcontext()"
        interface = device_interface.get_interface_for_device("mps")
        assert interface.get_raw_stream(0) == 0 and interface.is_triton_capable()
        assert interface.device_count() == 1
        assert benchmarking._BENCHMARK_DISPATCH["mps"] is mps_route._benchmark
        assert torch._inductor.config.autotune_in_subproc is False
    finally:
        mps_route.disable()
    after = (common.get_scheduling_for_device("mps"),
             type(common.get_device_op_overrides("mps")),
             device_interface.get_interface_for_device("mps"),
             benchmarking._BENCHMARK_DISPATCH.get("mps"))
    assert after == before


@pytest.fixture
def mps_driver(monkeypatch):
    """msltrans's driver on the MPS engine, compiling through the simulator's mirror."""
    from triton.runtime.driver import driver

    from msltrans.backend.driver import MetalDriver

    monkeypatch.setattr(mps_runtime, "mps_available", lambda: True)
    monkeypatch.setattr(torch.mps, "compile_shader", msltrans.sim.compile_shader, raising=False)
    monkeypatch.setattr(mps_runtime.MpsEngine, "device_name", lambda self: "Apple M2")
    monkeypatch.setattr(mps_runtime.MpsEngine, "core_count", lambda self: 10)
    clear_device_caches()
    metal = MetalDriver("mps")
    previous = driver.active
    driver.set_active(metal)
    try:
        yield metal
    finally:
        driver.set_active(previous)
        clear_device_caches()


@pytest.mark.usefixtures("inductor_route")
def test_cpu_kernels_run_on_the_simulator_next_to_an_mps_driver(mps_driver) -> None:
    from triton.runtime.driver import driver

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(x).cumsum(-1) - x.amax(-1, keepdim=True)

    x = torch.randn(6, 40)
    torch._dynamo.reset()
    msltrans.inductor.reset_launches()
    got = torch.compile(f)(x)
    assert torch.allclose(got, f(x.double()).float(), rtol=1e-5, atol=1e-5)
    assert msltrans.inductor.launches()
    assert driver.active is mps_driver, "an Inductor CPU kernel replaced the MPS driver"
    assert mps_driver.engine.libraries.compiles == 0
    assert mps_driver.sim_engine().libraries.compiles >= 1
    # A hand-written launch still targets the MPS engine: CPU tensors are refused there.
    a, b, out = torch.randn(100), torch.randn(100), torch.empty(100)
    with pytest.raises(MetalPointerDeviceError, match="'mps'"):
        vadd_kernel[(1,)](a, b, out, 100, BLOCK=128)


HAS_MPS = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


@pytest.mark.mps
@pytest.mark.skipif(not HAS_MPS, reason="needs an Apple GPU (torch.backends.mps)")
@pytest.mark.usefixtures("inductor_route")
def test_model_on_mps_tensors_runs_on_the_gpu() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64))
    x = torch.randn(8, 32)
    ref = model.double()(x.double())
    model = model.float().to("mps")
    torch._dynamo.reset()
    msltrans.inductor.reset_launches()
    got = torch.compile(model)(x.to("mps")).cpu()
    assert msltrans.inductor.launches()
    assert torch.allclose(got.double(), ref, rtol=1e-4, atol=1e-5)
