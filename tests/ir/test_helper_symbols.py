"""`noinline` helpers are named by MLIR symbols, bare or quoted, and read whole.

Triton names each specialisation of a helper by its constant arguments: Triton 3.6 as
`@"mod.f__i32__(1,)cconstexpr_3_"` (quoted, with a `(`), 3.7 on as `@mod.f__i32_c3`, quoted
where a constant is negative (`@"mod.f__i32_c-5"`). Cutting a name at its first `(` gave two
3.6 specialisations one name, and one body ran for both with no error.
"""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.ir.text import symbol_ref
from tests.support.run_kernel import compile_ttgir, dispatch, run_kernel


@pytest.mark.parametrize(("text", "name"), [
    ('%3 = tt.call @"m.f__i32__(1,)cconstexpr_3_"(%2) : (i32) -> i32',
     "m.f__i32__(1,)cconstexpr_3_"),
    ("tt.func private @m.f__i32_c2.5(%arg0: i32) -> f32", "m.f__i32_c2.5"),
    ('tt.call @"m.f__i32_c-5"(%0)', "m.f__i32_c-5"),
    ("tt.func public @kernel_0$x(%arg0", "kernel_0$x"),
    # String-literal escapes: \" \\ and two hex digits (MLIR prints `"` in a symbol as \22).
    ('tt.call @"a\\"b\\\\c\\22d\\41"(%0)', 'a"b\\c"dA'),
])
def test_symbol_ref_reads_bare_and_quoted_symbols(text: str, name: str) -> None:
    got = symbol_ref(text)
    assert got is not None and got[0] == name
    assert text[got[1]] == "("  # the index is just past the symbol


def test_symbol_ref_without_a_symbol() -> None:
    assert symbol_ref("%0 = arith.addi %a, %b : i32") is None


# The TTGIR Triton 3.6 makes for `scaled(n + pid, 3) + scaled(pid, 5) * 100` with
# `@triton.jit(noinline=True) def scaled(a, scale): return a * scale`, plus specialisations
# named as 3.7 on names them: a quoted negative constant, and a bare name that sanitizes to
# the same MSL identifier as the quoted one (`m.s_c-7` and `m.s_c_7`).
_HELPER = """\
  tt.func private @{sym}(%arg0: i32) -> i32 attributes {{noinline = true}} {{
    %c = arith.constant {k} : i32
    %0 = arith.muli %arg0, %c : i32
    tt.return %0 : i32
  }}
"""
_SYMBOLS = {3: '"m.scaled__i32__(1,)cconstexpr_3_"', 5: '"m.scaled__i32__(1,)cconstexpr_5_"',
            -7: '"m.s_c-7"', 11: "m.s_c_7"}
_KERNEL = """\
module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 1 : i32, ttg.target = \
"metal:apple-m1", "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @helpers_kernel(%arg0: !tt.ptr<i32>, %arg1: i32) attributes \
{{noinline = false}} {{
    %c100_i32 = arith.constant 100 : i32
    %c10000_i32 = arith.constant 10000 : i32
    %c1000000_i32 = arith.constant 1000000 : i32
    %0 = tt.get_program_id x : i32
    %1 = tt.addptr %arg0, %0 : !tt.ptr<i32>, i32
    %2 = arith.addi %arg1, %0 : i32
    %3 = tt.call @{s3}(%2) : (i32) -> i32
    %4 = tt.call @{s5}(%0) : (i32) -> i32
    %5 = arith.muli %4, %c100_i32 : i32
    %6 = arith.addi %3, %5 : i32
    %7 = tt.call @{s7}(%0) : (i32) -> i32
    %8 = arith.muli %7, %c10000_i32 : i32
    %9 = arith.addi %6, %8 : i32
    %10 = tt.call @{s11}(%0) : (i32) -> i32
    %11 = arith.muli %10, %c1000000_i32 : i32
    %12 = arith.addi %9, %11 : i32
    tt.store %1, %12 : !tt.ptr<i32>
    tt.return
  }}
{helpers}}}
"""


def test_specialisations_named_as_triton_3_6_names_them(tmp_path) -> None:
    helpers = "".join(_HELPER.format(sym=s, k=k) for k, s in _SYMBOLS.items())
    text = _KERNEL.format(s3=_SYMBOLS[3], s5=_SYMBOLS[5], s7=_SYMBOLS[-7], s11=_SYMBOLS[11],
                          helpers=helpers)
    path = tmp_path / "helpers.ttgir"
    path.write_text(text)
    program = compile_ttgir(path)
    n, grid = 2, 4
    out = np.zeros(grid, np.int32)
    dispatch(program, (grid,), (out, n))
    pid = np.arange(grid, dtype=np.int64)
    want = (n + pid) * 3 + pid * 5 * 100 + pid * -7 * 10000 + pid * 11 * 1000000
    assert out.tolist() == want.tolist()
    assert program.source.count("@triton.jit(noinline=True) helper") == 4


@triton.jit(noinline=True)
def _scaled(a, scale):
    return a * scale


@triton.jit
def _three_specialisations(out_ptr, n):
    pid = tl.program_id(0)
    # Three constants: 3 (a bare name on 3.7 on), -5 (quoted there), 2 (a fourth body).
    v = _scaled(n + pid, 3) + _scaled(pid, -5) * 100 + _scaled(pid + 1, 2) * 10000
    tl.store(out_ptr + pid, v)


def test_two_specialisations_of_one_helper_in_one_kernel() -> None:
    n, grid = 7, 5
    out = np.zeros(grid, np.int32)
    prog = run_kernel(_three_specialisations, (grid,), out, n, num_warps=1)
    pid = np.arange(grid, dtype=np.int64)
    want = (n + pid) * 3 + pid * -5 * 100 + (pid + 1) * 2 * 10000
    assert out.tolist() == want.tolist()
    assert prog.source.count("@triton.jit(noinline=True) helper") == 3
