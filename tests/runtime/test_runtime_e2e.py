"""Acceptance: a vector add launched as `kernel[grid](...)` runs through the simulator.

The kernel is plain Triton; inputs are CPU tensors; the output bytes must equal numpy's x + y
(an fp32 add has one correctly rounded result, so the comparison is exact).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.driver import driver

from msltrans.errors import MetalNonRecoverableError
from tests.support.kernels import broadcast_add_kernel, vadd_kernel


@pytest.fixture(autouse=True)
def sim_driver():
    active = driver.active
    if type(active).__name__ != "MetalDriver" or active.engine_name != "sim":
        pytest.skip("needs the Metal driver on the simulator engine")
    return active


def _add(x: torch.Tensor, y: torch.Tensor, block: int, num_warps: int = 4) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    vadd_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block, num_warps=num_warps)
    return out


@pytest.mark.parametrize("n, block, num_warps", [
    (1, 128, 4), (127, 128, 4), (1000, 256, 2), (4097, 1024, 4), (98432, 1024, 8),
    (333, 32, 1),
])
def test_vector_add_bytes_equal_numpy(n, block, num_warps):
    gen = np.random.default_rng(n)
    xs = gen.standard_normal(n, dtype=np.float32)
    ys = gen.standard_normal(n, dtype=np.float32)
    out = _add(torch.from_numpy(xs), torch.from_numpy(ys), block, num_warps)
    assert out.numpy().tobytes() == (xs + ys).tobytes()


def test_vector_add_on_views_with_storage_offset():
    base_x = torch.arange(600, dtype=torch.float32) * 0.5
    base_y = torch.arange(600, dtype=torch.float32) * -0.25
    x, y = base_x[7:507], base_y[55:555]  # storage offsets, contiguous views
    out = _add(x, y, 128)
    assert out.numpy().tobytes() == (x.numpy() + y.numpy()).tobytes()


def test_masked_tail_is_not_written():
    x, y = torch.ones(100), torch.ones(100)
    out = torch.full((128,), -7.0)
    vadd_kernel[(1,)](x, y, out, 100, BLOCK=128)
    assert torch.all(out[:100] == 2.0) and torch.all(out[100:] == -7.0)


def test_broadcast_2d_kernel():
    M, N = 37, 70
    x = torch.randn(M, N)
    row = torch.randn(N)
    out = torch.empty_like(x)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 32))
    broadcast_add_kernel[grid](x, row, out, M, N, x.stride(0), BLOCK_M=16, BLOCK_N=32)
    assert out.numpy().tobytes() == (x.numpy() + row.numpy()[None, :]).tobytes()


def test_mps_tensor_argument_is_refused_on_sim():
    class FakeMps:
        device = torch.device("meta")
        dtype = torch.float32

        def data_ptr(self) -> int:
            return 4096

    x = torch.ones(8)
    with pytest.raises(MetalNonRecoverableError, match="tensor on 'meta'") as info:
        vadd_kernel[(1,)](x, FakeMps(), x, 8, BLOCK=32)
    assert "move it with .to('cpu')" in str(info.value)
    # Triton's CUDA/AMD drivers raise ValueError for a pointer they cannot access: so does this
    assert isinstance(info.value, ValueError)


def test_warm_launches_reuse_the_compiled_library(sim_driver):
    x, y = torch.randn(64), torch.randn(64)
    _add(x, y, 64)
    before = sim_driver.engine.libraries.compiles
    for _ in range(3):
        _add(x, y, 64)
    assert sim_driver.engine.libraries.compiles == before


def test_kernel_dump_writes_the_real_msl(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_KERNEL_DUMP", "1")
    monkeypatch.setenv("TRITON_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    for fn in (vadd_kernel,):
        fn.device_caches.clear()
    x, y = torch.randn(50), torch.randn(50)
    out = _add(x, y, 64)
    assert torch.equal(out, x + y)
    (msl,) = tmp_path.glob("*/vadd_kernel.msl")
    assert "kernel void vadd_kernel(" in msl.read_text()


@triton.jit
def scalar_args_kernel(out_ptr, a, b, flag, alpha, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.where(flag, a.to(tl.float32), b.to(tl.float32)) * alpha
    tl.store(out_ptr + offs, tl.zeros([BLOCK], tl.float32) + v)


@pytest.mark.parametrize("a, b, flag, alpha, expect", [
    (2**40, 7, True, 0.5, np.float32(2**40) * np.float32(0.5)),        # i64 scalar
    (3, 2**64 - 5, False, 2.0, np.uint64(2**64 - 5).astype(np.float32) * np.float32(2.0)),
    (-3, 5, True, 1.5, np.float32(-3) * np.float32(1.5)),              # i32 + bool
    (-3, 5, False, 0.1, np.float32(5) * np.float32(0.1)),
])
def test_scalar_arguments_reach_the_kernel_with_their_types(a, b, flag, alpha, expect):
    out = torch.empty(32)
    scalar_args_kernel[(1,)](out, a, b, flag, alpha, BLOCK=32)
    assert out.numpy().tobytes() == np.full(32, expect, dtype=np.float32).tobytes()


def test_float64_tensor_is_refused_not_misread(tmp_path, monkeypatch):
    """fp64 compiles as fp32 (with a warning); its float64 buffer must not be read as float."""
    # The warning comes from compilation: a kernel cached on disk or in memory by an earlier
    # run would launch without it, so this test compiles afresh.
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    vadd_kernel.device_caches.clear()
    x = torch.arange(16, dtype=torch.float64)
    out = torch.zeros(16, dtype=torch.float64)
    with pytest.warns(UserWarning, match="fp64 downcast"), \
            pytest.raises(MetalNonRecoverableError, match=r"float64 tensor(.|\n)*a_ptr\.float\(\)"):
        vadd_kernel[(1,)](x, x, out, 16, BLOCK=16)
    assert torch.equal(out, torch.zeros(16, dtype=torch.float64))
