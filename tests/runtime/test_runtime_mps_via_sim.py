"""The MPS engine's code path, run here through the simulator (it mirrors torch.mps).

`torch.mps.compile_shader` is replaced by `msltrans.sim.compile_shader`, which has the same
call convention, so the MPS engine's compile, load and dispatch code runs for real on CPU
tensors. On a Mac, tests/runtime/test_runtime_mps.py runs the same path on the GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import msltrans.runtime.mps as mps
import msltrans.sim
from msltrans._triton_compat import clear_device_caches
from msltrans.errors import MetalNonRecoverableError
from tests.support.kernels import vadd_kernel
from tests.support.run_kernel import compile_kernel


@pytest.fixture
def engine(monkeypatch) -> mps.MpsEngine:
    monkeypatch.setattr(mps, "mps_available", lambda: True)
    monkeypatch.setattr(torch.mps, "compile_shader", msltrans.sim.compile_shader, raising=False)
    return mps.MpsEngine()


def test_mps_engine_compiles_loads_and_dispatches(engine: mps.MpsEngine) -> None:
    n, block = 1000, 256
    x = torch.randn(n)
    y = torch.randn(n)
    out = torch.full((n,), float("nan"))
    program = compile_kernel(vadd_kernel, (x.numpy(), y.numpy(), out.numpy(), n), 4,
                             BLOCK=block)
    fn = engine.load(program.source, program.kernel_name)
    assert engine.load(program.source, program.kernel_name) is not None  # cached library
    assert engine.max_threads(fn) >= program.threads_per_group
    t = program.threads_per_group
    grid = (n + block - 1) // block
    fn(*program.engine_args((x, y, out, n)), threads=(grid * t, 1, 1), group_size=(t, 1, 1),
       arg_casts=program.arg_casts)
    assert np.array_equal(out.numpy(), (x + y).numpy())


def test_metal_compiler_rejection_is_a_refusal(engine: mps.MpsEngine) -> None:
    with pytest.raises(MetalNonRecoverableError, match="Metal compiler rejected"):
        engine.load("kernel void k(device float* x [[buffer(0)]]) { x[0] = undefined_name; }",
                    "k")


def test_chip_slug() -> None:
    assert mps.chip_slug("Apple M2 Pro") == "apple-m2-pro"
    assert mps.chip_slug("???") == "apple-gpu"


@pytest.mark.parametrize(("device", "ok"), [
    ("Apple M1", False), ("Apple M1 Max", False), ("Apple M2", True), ("Apple M2 Pro", True),
    ("Apple M3 Max", True), ("Apple M4", True), ("AMD Radeon Pro 5500M", False),
])
def test_ulong_minmax_needs_m2_or_later(engine: mps.MpsEngine, monkeypatch, device: str,
                                        ok: bool) -> None:
    # uint64 tl.atomic_max lowers to atomic_ulong's void max (MSL 6.15.4.6): the Metal
    # Feature Set Tables give it to Apple9, and Apple8 in a Mac (M2); the M1 has none.
    from tests.e2e.test_atomic64 import rmw64_kernel

    z = np.zeros(8, np.uint64)
    program = compile_kernel(rmw64_kernel, (z, z.copy(), 8), 1, OP="max", SEM="relaxed",
                             SCOPE="gpu", SLOTS=5, BLOCK=32)
    monkeypatch.setattr(engine, "device_name", lambda: device)
    if ok:
        assert engine.load(program.source, program.kernel_name) is not None
    else:
        with pytest.raises(MetalNonRecoverableError, match="from the M2 on"):
            engine.load(program.source, program.kernel_name)
    plain = compile_kernel(vadd_kernel, (np.zeros(4, np.float32),) * 3 + (4,), 1, BLOCK=32)
    assert engine.load(plain.source, plain.kernel_name) is not None  # no 64-bit max: any GPU


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=1),
                          triton.Config({"BLOCK": 256}, num_warps=2)], key=["n"])
@triton.jit
def _tuned_scale(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n) * 3.0, mask=offs < n)


@pytest.fixture
def mps_path_driver(monkeypatch):
    """The Metal driver on the "mps" engine, with torch.mps's compile_shader and synchronize
    played by the simulator and a counter; CPU tensors stand for MPS ones."""
    from triton.runtime.driver import driver

    import msltrans.backend.driver as driver_mod

    previous = driver.active  # made now, before the environment says "mps"
    syncs: list[int] = []
    monkeypatch.setenv("MSLTRANS_ENGINE", "mps")
    monkeypatch.setattr(mps, "mps_available", lambda: True)
    monkeypatch.setattr(driver_mod, "mps_available", lambda: True)
    monkeypatch.setattr(torch.mps, "compile_shader", msltrans.sim.compile_shader, raising=False)
    monkeypatch.setattr(torch.mps, "synchronize", lambda: syncs.append(1), raising=False)
    monkeypatch.setattr(mps.MpsEngine, "device_type", "cpu")
    monkeypatch.setattr(mps.MpsEngine, "device_name", lambda self: "Apple M2 Pro")
    monkeypatch.setattr(mps.MpsEngine, "core_count", lambda self: 19)
    clear_device_caches()
    metal = driver_mod.MetalDriver()
    assert metal.engine_name == "mps"
    driver.set_active(metal)
    try:
        yield syncs
    finally:
        driver.set_active(previous)
        clear_device_caches()


def test_autotune_and_do_bench_on_the_mps_code_path(mps_path_driver) -> None:
    syncs = mps_path_driver
    src, dst = torch.randn(1000), torch.empty(1000)
    _tuned_scale[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](src, dst, 1000)
    assert torch.equal(dst, src * 3.0)
    assert _tuned_scale.best_config.kwargs["BLOCK"] in (64, 256)
    tuned_syncs = len(syncs)
    assert tuned_syncs > 0  # the autotuner's benchmarker synchronised the MPS queue
    dst.zero_()
    launch = lambda: _tuned_scale[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](  # noqa: E731
        src, dst, 1000)
    ms = triton.testing.do_bench(launch, warmup=2, rep=5)
    assert 0 < ms < 10_000 and torch.equal(dst, src * 3.0)
    assert len(syncs) > tuned_syncs  # do_bench's events synchronise through the engine
    q = triton.testing.do_bench(launch, warmup=1, rep=3, quantiles=[0.5, 0.8])
    assert len(q) == 2 and 0 < q[0] <= q[1]
