"""Element loops are fully unrolled only up to a size (msltrans/lower/unroll.py): past it
the arrays live in memory anyway and clang's compile time explodes."""

from __future__ import annotations

import re

import numpy as np
import pytest

from msltrans.lower.unroll import (
    MAX_UNROLLED_NEST,
    MAX_UNROLLED_TRIPS,
    cap_unroll,
    unrolled_trips,
)
from msltrans.workloads.dot_kernels import dot_acc_kernel
from tests.e2e.dot_support import chain, compile_with, dot_stats, randn, run, same_bits

F32_SIG = {n: "*fp32" for n in ("a_ptr", "b_ptr", "c_ptr", "out_ptr")}


@pytest.mark.parametrize(("line", "kept"), [
    ("msl_unroll for (uint msl_r = 0; msl_r < 1024u; ++msl_r) {", True),
    ("msl_unroll for (uint msl_r = 0; msl_r < 1025u; ++msl_r) {", False),
    ("msl_unroll for (uint r = 0; r < 4096u; ++r) {", False),
    # 16-byte accesses step by 4: 4096 registers are 1024 iterations.
    ("msl_unroll for (uint msl_r = 0; msl_r < 4096u; msl_r += 4u) {  // 16-byte accesses", True),
    ("msl_unroll for (uint msl_r = 0; msl_r < 8192u; msl_r += 4u) {", False),
    ("msl_unroll for (uint s = 10; s < 1034u; ++s) {", True),
    ("msl_unroll for (uint s = 2; s < 1030u; ++s) {", False),
    # Not an element loop of constant bounds: left as written.
    ("msl_unroll for (uint k = 0; k < n; ++k) {", True),
    ("x = 1;", True),
])
def test_cap_unroll(line: str, kept: bool) -> None:
    out = cap_unroll("    " + line)
    assert out.startswith("    ")
    if kept:
        assert out == "    " + line
    else:
        assert out == "    " + line.removeprefix("msl_unroll ")


def _unrolled_trips(source: str) -> list[int]:
    return [n for line in source.splitlines() if (n := unrolled_trips(line)) is not None]


def test_large_register_dot_keeps_plain_loops_and_is_exact() -> None:
    """Triton's test_dot[1-64-128-128-2-...-ieee-float32-float32]: the A operand in a
    #dot_op<#blocked> layout is 4,096 registers a thread, the fma chain 128 registers x 128
    deep. Both unrolled, clang took 121-138 s (past the conformance run's 120 s per test);
    capped, seconds. The chain is still the in-order fp32 fma chain, bit for bit."""
    m, n, k = 64, 128, 128
    program = compile_with(dot_acc_kernel, F32_SIG, 2, M=m, N=n, K=k)
    (stats,) = dot_stats(program)
    assert stats["path"] == "registers" and int(stats["regs_a"]) > MAX_UNROLLED_TRIPS
    assert int(stats["regs_out"]) * k > MAX_UNROLLED_NEST
    assert max(_unrolled_trips(program.source)) <= MAX_UNROLLED_TRIPS
    assert f"for (uint r = 0; r < {stats['regs_a']}u; ++r)" in program.source
    # The K chain itself stays unrolled (constant table indices).
    assert f"msl_unroll for (uint k = 0; k < {k}u; ++k)" in program.source
    a, b, c = randn((m, k), "float32", 1), randn((k, n), "float32", 2), randn((m, n), "float32", 3)
    out = np.empty((m, n), np.float32)
    run(program, (1,), a, b, c, out)
    assert same_bits(out, chain(a, b, c))


def test_small_dot_still_fully_unrolled() -> None:
    program = compile_with(dot_acc_kernel, F32_SIG, 4, "registers", M=16, N=16, K=16)
    (stats,) = dot_stats(program)
    assert int(stats["regs_out"]) * 16 <= MAX_UNROLLED_NEST
    assert "msl_unroll for (uint r = 0;" in program.source
    assert not re.search(r"(?<!msl_unroll )for \(uint r = 0; r < \d+u; \+\+r\)", program.source)
