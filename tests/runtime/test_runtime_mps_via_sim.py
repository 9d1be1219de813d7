"""The MPS engine's code path, run here through the simulator (it mirrors torch.mps).

`torch.mps.compile_shader` is replaced by `msltrans.sim.compile_shader`, which has the same
call convention, so the MPS engine's compile, load and dispatch code runs for real on CPU
tensors. On a Mac, tests/runtime/test_runtime_mps.py runs the same path on the GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import msltrans.runtime.mps as mps
import msltrans.sim
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
