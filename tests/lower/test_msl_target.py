"""The lowering emits for one MSL version: what needs a newer one is refused, with the op,
the source line and the macOS that has it; what it emits compiles on the simulator at that
version."""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans import msl_version
from msltrans.errors import MetalNonRecoverableError
from msltrans.ir import read_module
from msltrans.lower import lower_module
from msltrans.options import MetalOptions
from msltrans.toolchain import to_ttgir


@triton.jit
def counter_kernel(count_ptr, out_ptr, SEM: tl.constexpr):
    old = tl.atomic_add(count_ptr, 1, sem=SEM)
    tl.store(out_ptr + tl.program_id(0), old)


def _program(sem: str, version: int):
    mod = to_ttgir(counter_kernel, {"count_ptr": "*i32", "out_ptr": "*i32"}, {"SEM": sem}, 1)
    return lower_module(read_module(mod), msl_version_target=version)


@pytest.mark.parametrize("sem", ["acq_rel", "acquire", "release"])
def test_fenced_atomics_refused_below_3_2(sem: str) -> None:
    with pytest.raises(MetalNonRecoverableError) as error:
        _program(sem, 310)
    text = str(error.value)
    assert "tt.atomic_rmw" in text and "test_msl_target.py:" in text
    assert "needs MSL 3.2" in text and "macOS 15" in text and "§6.15.3" in text


def test_relaxed_atomics_run_at_3_1() -> None:
    import msltrans.sim as sim

    program = _program("relaxed", 310)
    assert "atomic_thread_fence" not in program.source and "#error" not in program.source
    lib = sim.compile_shader(program.source, msl_version="3.1")
    count, out = np.zeros(1, np.int32), np.zeros(8, np.int32)
    t = program.threads_per_group
    getattr(lib, program.kernel_name)(*program.engine_args((count, out)), threads=(8 * t, 1, 1),
                                      group_size=(t, 1, 1), arg_casts=program.arg_casts)
    assert count[0] == 8 and sorted(out.tolist()) == list(range(8))


def test_fenced_kernel_states_its_version() -> None:
    source = _program("acq_rel", 320).source
    assert "#if __METAL_VERSION__ < 320" in source
    assert '#error "msltrans: this kernel needs MSL 3.2 (macOS 15 or later)' in source
    assert source.index("#error") < source.index("#include <metal_stdlib>")


def test_options_carry_the_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(msl_version.ENV, "3.1")
    assert MetalOptions().msl_version == 310
    assert MetalOptions(msl_version=320).msl_version == 320
    assert MetalOptions().hash() != MetalOptions(msl_version=320).hash()
    with pytest.raises(MetalNonRecoverableError, match="not supported"):
        MetalOptions(msl_version=300)


def test_jit_launch_refuses_at_3_1(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # noqa: ANN001
    import torch

    monkeypatch.setenv(msl_version.ENV, "3.1")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    counter_kernel.device_caches.clear()  # compiled kernels are kept per launch options
    count, out = torch.zeros(1, dtype=torch.int32), torch.zeros(2, dtype=torch.int32)
    with pytest.raises(MetalNonRecoverableError, match="needs MSL 3.2"):
        counter_kernel[(2,)](count, out, SEM="acq_rel")
    counter_kernel[(2,)](count, out, SEM="relaxed")
    assert count.item() == 2
    counter_kernel.device_caches.clear()


@triton.jit(noinline=True)
def _helper_atomic(count_ptr, SEM: tl.constexpr):
    return tl.atomic_add(count_ptr, 1, sem=SEM)


@triton.jit
def helper_counter_kernel(count_ptr, out_ptr, SEM: tl.constexpr):
    tl.store(out_ptr + tl.program_id(0), _helper_atomic(count_ptr, SEM))


def _helper_program(sem: str, version: int):
    mod = to_ttgir(helper_counter_kernel, {"count_ptr": "*i32", "out_ptr": "*i32"},
                   {"SEM": sem}, 1)
    return lower_module(read_module(mod), msl_version_target=version)


def test_noinline_helper_lowers_for_the_kernels_target() -> None:
    """A noinline helper's body is lowered for the kernel's MSL version: what it uses is
    refused below that version and raises the kernel's stated version (the guard)."""
    with pytest.raises(MetalNonRecoverableError, match="needs MSL 3.2"):
        _helper_program("acq_rel", 310)
    source = _helper_program("acq_rel", 320).source
    assert "helper" in source and "atomic_thread_fence" in source
    assert '#error "msltrans: this kernel needs MSL 3.2' in source
    relaxed = _helper_program("relaxed", 310).source
    assert "atomic_thread_fence" not in relaxed and "#error" not in relaxed
