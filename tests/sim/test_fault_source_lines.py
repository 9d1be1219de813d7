"""Simulator faults name the @triton.jit line the faulting MSL came from, not only the MSL."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import triton
import triton.language as tl

from tests.support.run_kernel import compile_kernel


@triton.jit
def unmasked_copy(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < 8)
    tl.store(dst + offs, x)  # no mask: writes past an 8-element dst


@triton.jit
def racy_store(out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs * 0, offs)  # every lane writes element 0: the winner is the order


def _line_of(fn, text: str) -> int:  # noqa: ANN001
    lines, start = inspect.getsourcelines(fn.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _launch(program, args, grid=1, **kw):  # noqa: ANN001, ANN003, ANN202
    import msltrans.sim as sim

    kernel = getattr(sim.compile_shader(program.source), program.kernel_name)
    t = program.threads_per_group
    return kernel, dict(threads=(grid * t, 1, 1), group_size=(t, 1, 1),
                        arg_casts=program.arg_casts, **kw), program.engine_args(args)


def test_out_of_bounds_names_the_triton_store() -> None:
    import msltrans.sim as sim

    src, dst = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    program = compile_kernel(unmasked_copy, (src, dst), 1, BLOCK=32)
    kernel, launch, args = _launch(program, (src, dst))
    with pytest.raises(sim.OutOfBoundsError) as error:
        kernel(*args, **launch)
    line = _line_of(unmasked_copy, "tl.store(dst + offs, x)")
    assert f"test_fault_source_lines.py:{line} (tt.store)" in error.value.where.triton_lines
    assert f"Triton source test_fault_source_lines.py:{line} (tt.store)" in str(error.value)
    assert "shader.metal:" in str(error.value)  # the MSL line too


def test_race_report_names_the_writing_lines() -> None:
    import msltrans.sim as sim

    out = np.zeros(1, np.int32)
    program = compile_kernel(racy_store, (out,), 1, BLOCK=32)
    kernel, launch, args = _launch(program, (out,))
    with pytest.raises(sim.RaceError) as error:
        sim.check_races(kernel, *args, **launch)
    line = _line_of(racy_store, "tl.store(out + offs * 0, offs)")
    assert f"test_fault_source_lines.py:{line} (tt.store)" in error.value.writers
    assert "Triton source lines that write memory" in str(error.value)


DIVERGENT = """#include <metal_stdlib>
using namespace metal;
kernel void k(device float* x [[buffer(0)]], uint i [[thread_index_in_threadgroup]]) {
    // tt.reduce  my_kernel.py:12
    if (i < 16) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    // tt.store  my_kernel.py:13
    x[i] = 1.0f;
}
"""


def test_divergent_barrier_names_the_triton_op() -> None:
    import msltrans.sim as sim

    lib = sim.compile_shader(DIVERGENT)
    with pytest.raises(sim.DivergenceError) as error:
        lib.k(np.zeros(32, np.float32), threads=32, group_size=32)
    assert error.value.where.triton_lines == ["my_kernel.py:12 (tt.reduce)"]
