"""The simulator compiles each source as one MSL version and offers only that version's
features; it rejects what Apple's compiler rejects: buffer indices past 30, attributes Metal
does not define, memory orders other than relaxed on atomic functions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from msltrans import msl_version
from msltrans.errors import MetalNonRecoverableError

FENCE = """#include <metal_stdlib>
using namespace metal;
kernel void k(device uint* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = i;
    atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
}
"""
HEADER = Path(msl_version.__file__).parent / "sim" / "include" / "msl_sim" / "features.h"


def test_features_header_is_generated_from_the_one_table() -> None:
    assert HEADER.read_text() == msl_version.features_header(), (
        "regenerate: python -c \"from msltrans import msl_version; "
        "open('msltrans/sim/include/msl_sim/features.h','w')"
        ".write(msl_version.features_header())\"")


@pytest.mark.parametrize("given, expected", [("3.1", 310), ("3_2", 320), (320, 320),
                                             ("400", 400), ("4.0", 400)])
def test_version_spellings(given, expected) -> None:  # noqa: ANN001
    assert msl_version.parse(given) == expected


@pytest.mark.parametrize("given", ["3.0", "2.4", "300", "5.0", "latest"])
def test_unsupported_versions_are_refused(given) -> None:  # noqa: ANN001
    with pytest.raises(MetalNonRecoverableError, match="is not supported"):
        msl_version.parse(given)


@pytest.mark.parametrize("macos, version", [(14, 310), (15, 320), (16, 320), (26, 400)])
def test_torch_compiles_with_this_version_per_macos(macos, version) -> None:  # noqa: ANN001
    assert msl_version.for_macos(macos) == version


def test_environment_sets_the_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(msl_version.ENV, "3.1")
    assert msl_version.target() == 310
    monkeypatch.delenv(msl_version.ENV)
    monkeypatch.setattr(msl_version, "_macos_major", lambda: None)
    assert msl_version.target() == msl_version.DEFAULT


def test_fence_needs_msl_3_2(sim) -> None:  # noqa: ANN001
    lib = sim.compile_shader(FENCE, msl_version="3.2")
    x = np.zeros(4, np.uint32)
    lib.k(x, threads=4)
    assert x.tolist() == [0, 1, 2, 3]
    with pytest.raises(sim.CompileError, match="atomic_thread_fence|thread_scope"):
        sim.compile_shader(FENCE, msl_version="3.1")


def test_bfloat_is_there_from_the_minimum(sim) -> None:  # noqa: ANN001
    src = """#include <metal_stdlib>
using namespace metal;
kernel void k(device bfloat* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = bfloat(float(i) + 0.5f);
}
"""
    x = np.zeros(2, np.uint16)
    sim.compile_shader(src, msl_version="3.1").k(x, threads=2)
    assert x.tolist() == [0x3F00, 0x3FC0]


def test_only_relaxed_and_seq_cst_exist(sim) -> None:  # noqa: ANN001
    src = FENCE.replace("memory_order_seq_cst", "memory_order_acq_rel")
    with pytest.raises(sim.CompileError, match="memory_order_acq_rel"):
        sim.compile_shader(src, msl_version="3.2")


def test_atomic_functions_take_only_relaxed(sim) -> None:  # noqa: ANN001
    src = """#include <metal_stdlib>
using namespace metal;
kernel void k(device atomic_uint* x [[buffer(0)]]) {
    atomic_fetch_add_explicit(x, 1u, memory_order_seq_cst);
}
"""
    lib = sim.compile_shader(src, msl_version="3.2")
    with pytest.raises(sim.DeviceFailure, match="memory_order_relaxed"):
        lib.k(np.zeros(1, np.uint32), threads=1)


def test_buffer_index_31_is_rejected(sim) -> None:  # noqa: ANN001
    ok = FENCE.replace("buffer(0)", "buffer(30)")
    sim.compile_shader(ok, msl_version="3.2")
    with pytest.raises(sim.CompileError, match=r"buffer\(31\).*indices 0 to 30"):
        sim.compile_shader(FENCE.replace("buffer(0)", "buffer(31)"), msl_version="3.2")


def test_implicit_index_past_30_is_rejected(sim) -> None:  # noqa: ANN001
    params = ", ".join(f"device float* p{i}" for i in range(32))
    src = f"""#include <metal_stdlib>
using namespace metal;
kernel void k({params}, uint i [[thread_position_in_grid]]) {{ p0[i] = 0.0f; }}
"""
    with pytest.raises(sim.CompileError, match="buffer index 31"):
        sim.compile_shader(src)


@pytest.mark.parametrize("bad, guess", [("[[bufer(0)]]", "buffer"),
                                        ("[[thread_position_in_grd]]", "thread_position_in_grid"),
                                        ("[[buffer(0), bogus]]", None)])
def test_unknown_attributes_are_errors(sim, bad, guess) -> None:  # noqa: ANN001
    src = FENCE.replace("[[buffer(0)]]", "[[buffer(0)]]" if "grd" in bad else bad)
    if "grd" in bad:
        src = src.replace("[[thread_position_in_grid]]", bad)
    with pytest.raises(sim.CompileError, match="unknown attribute") as error:
        sim.compile_shader(src)
    assert "shader.metal:3" in str(error.value)
    if guess:
        assert f"did you mean `{guess}`" in str(error.value)


def test_known_attributes_elsewhere_compile(sim) -> None:  # noqa: ANN001
    src = """#include <metal_stdlib>
using namespace metal;
[[maybe_unused]] static inline float twice(float v) { return 2.0f * v; }
[[kernel]] [[max_total_threads_per_threadgroup(64)]] void k(device float* x [[buffer(0)]],
        uint i [[thread_position_in_grid]]) {
    if (i < 2) [[likely]] { x[i] = twice(float(i)); }
}
"""
    x = np.zeros(2, np.float32)
    sim.compile_shader(src).k(x, threads=2)
    assert x.tolist() == [0.0, 2.0]
