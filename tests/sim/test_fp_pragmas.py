"""The floating-point mode is pinned by every kernel msltrans emits, and the simulator refuses
source whose mode it cannot compute as Apple would (msltrans/math_mode.py,
msltrans/sim/fp_pragmas.py; MSL specification section 1.6.3)."""

from __future__ import annotations

import numpy as np
import pytest

import msltrans.sim as sim
from msltrans import math_mode
from msltrans.errors import MetalNonRecoverableError
from msltrans.ir import read_module
from msltrans.sim.errors import CompileError
from msltrans.toolchain import to_ttgir
from tests.support.kernels import vadd_kernel

BODY = """
kernel void add_one(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = x[i] * 2.0f + 1.0f;
}
"""
HEAD = "#include <metal_stdlib>\nusing namespace metal;\n"


def _src(pragmas: str) -> str:
    return pragmas + HEAD + BODY


@pytest.mark.parametrize("mode", ["fast", "relaxed"])
def test_fast_and_relaxed_math_refused(mode: str) -> None:
    with pytest.raises(CompileError, match=rf"shader.metal:1: `math_mode\({mode}\)`.*IEEE"):
        sim.compile_shader(_src(f"#pragma METAL fp math_mode({mode})\n"), msl_version="3.2")


@pytest.mark.parametrize("mode", ["fast", "on"])
def test_contraction_other_than_off_refused(mode: str) -> None:
    with pytest.raises(CompileError, match=rf"`contract\({mode}\)`: the simulator compiles"):
        sim.compile_shader(_src(f"#pragma METAL fp contract({mode})\n"), msl_version="3.2")


def test_math_mode_pragma_needs_3_2_unless_guarded() -> None:
    with pytest.raises(CompileError, match=r"needs MSL 3\.2 .*section 1\.6\.3.*MSL 3\.1"):
        sim.compile_shader(_src("#pragma METAL fp math_mode(safe)\n"), msl_version="3.1")
    guarded = "#if __METAL_VERSION__ >= 320\n#pragma METAL fp math_mode(safe)\n#endif\n"
    sim.compile_shader(_src(guarded), msl_version="3.1")
    sim.compile_shader(_src(guarded + "#pragma METAL fp contract(off)\n"), msl_version="3.2")


def test_torch_fast_math_needs_the_safe_pragma(monkeypatch: pytest.MonkeyPatch) -> None:
    guarded = "#if __METAL_VERSION__ >= 320\n#pragma METAL fp math_mode(safe)\n#endif\n"
    monkeypatch.setenv(math_mode.FAST_MATH_ENV, "1")
    with pytest.raises(CompileError, match="PYTORCH_MPS_FAST_MATH is set"):
        sim.compile_shader(_src(""), msl_version="3.2")
    # the guard leaves no pragma at 3.1: torch's fast math would apply there
    with pytest.raises(CompileError, match="PYTORCH_MPS_FAST_MATH is set"):
        sim.compile_shader(_src(guarded), msl_version="3.1")
    lib = sim.compile_shader(_src(guarded), msl_version="3.2")
    x = np.array([1.5, -2.0], np.float32)
    lib.add_one(x, threads=2, group_size=2)
    assert x.tolist() == [4.0, -3.0]
    monkeypatch.setenv(math_mode.FAST_MATH_ENV, "0")
    sim.compile_shader(_src(""), msl_version="3.2")


def test_launch_check_refuses_fast_math_below_3_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(math_mode.FAST_MATH_ENV, raising=False)
    math_mode.check_launch(310)
    monkeypatch.setenv(math_mode.FAST_MATH_ENV, "1")
    math_mode.check_launch(320)
    with pytest.raises(MetalNonRecoverableError, match=r"MSL 3\.1 has no .*macOS 15"):
        math_mode.check_launch(310)


def test_every_emitted_kernel_pins_safe_math_and_no_contraction(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from msltrans.lower import lower_module

    mod = to_ttgir(vadd_kernel, {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32",
                                 "n": "i32"}, {"BLOCK": 256}, 4)
    source = lower_module(read_module(mod), msl_version_target=320).source
    head = source.split("#include <metal_stdlib>")[0]
    assert "#pragma METAL fp contract(off)" in head
    assert "#if __METAL_VERSION__ >= 320\n#pragma METAL fp math_mode(safe)\n#endif" in head
    monkeypatch.setenv(math_mode.FAST_MATH_ENV, "1")
    sim.compile_shader(source, msl_version="3.2")   # pinned: accepted under torch's fast math
