"""tt.dot code structure without running it: the path chosen, MMAs, barriers per K step,
operand folding, the register plan — the numbers benchmarks/codegen_stats.py prints."""

from __future__ import annotations

import pytest

from benchmarks.codegen_stats import _tutorial, k_step_text, row
from msltrans.errors import MetalNonRecoverableError
from msltrans.layout import LinearLayout, decode_layout
from msltrans.lower.ops_dot import force_path, register_plan
from tests.e2e.dot_kernels import dot_acc_kernel, dot_strided_kernel
from tests.e2e.dot_support import compile_with, dot_stats
from tests.support.run_kernel import check_msl_compiles

F32 = {n: "*fp32" for n in ("a_ptr", "b_ptr", "c_ptr", "out_ptr")}


def test_tutorial_fp16_k_step_structure() -> None:
    program = _tutorial("*fp16", (64, 64, 32), 4, "auto")
    (stats,) = dot_stats(program)
    assert stats["path"] == "simdgroup" and stats["tiles"] == "4x4"
    r = row("t03", program)
    # 64x64 outputs in 8x8 tiles x 4 k-steps; one 4x4 block of tiles per simdgroup.
    assert (r["mma/step"], r["mma/sg"]) == (256, 64)
    # The #dot_op conversions fold into the dot's staging: one barrier before staging,
    # one after, one after the tiles are stored — nothing else in the K loop.
    assert r["bar/step"] == 3
    step = k_step_text(program.source)
    assert step.count("folded into the tt.dot") == 2
    assert step.count("simdgroup_multiply_accumulate") == 1  # one site, inside MSL loops
    assert program.shared_bytes <= 32768
    check_msl_compiles(program.source)


@pytest.mark.parametrize("path", ["registers", "scratch"])
def test_fallback_paths_in_the_k_loop(path: str) -> None:
    program = _tutorial("*fp32", (32, 32, 16), 4, path)
    r = row("t03", program)
    assert r["path"] == path and r["mma/step"] == 0
    # registers: the two #dot_op conversions (2 barriers each) stay; scratch folds them.
    assert r["bar/step"] == (4 if path == "registers" else 2)
    check_msl_compiles(program.source)


@pytest.mark.parametrize(("m", "n", "k"), [(4, 16, 16), (16, 2, 16), (16, 16, 4)])
def test_shapes_off_the_8x8_grid_take_the_register_path(m: int, n: int, k: int) -> None:
    program = compile_with(dot_acc_kernel, F32, 2, M=m, N=n, K=k)
    assert dot_stats(program)[0]["path"] == "registers"
    with pytest.raises(MetalNonRecoverableError, match="forced simdgroup"):
        compile_with(dot_acc_kernel, F32, 2, "simdgroup", M=m, N=n, K=k)


def test_staging_too_big_for_threadgroup_memory_falls_back() -> None:
    # fp32 128x64x64: C 32 KB alone exceeds Metal's 32 KB -> the register path.
    program = compile_with(dot_acc_kernel, F32, 4, M=128, N=64, K=64)
    assert dot_stats(program)[0]["path"] == "registers"


def test_register_plan_follows_the_layouts() -> None:
    parent = ("#ttg.blocked<{sizePerThread = [2, 2], threadsPerWarp = [4, 8], "
              "warpsPerCTA = [2, 2], order = [1, 0]}>")
    out = decode_layout(parent, (32, 32))
    a = decode_layout(f"#ttg.dot_op<{{opIdx = 0, parent = {parent}}}>", (32, 16))
    b = decode_layout(f"#ttg.dot_op<{{opIdx = 1, parent = {parent}}}>", (16, 32))
    plan = register_plan(out, a, b, 16)
    assert plan is not None
    for r in range(out.num_regs):
        i, j = out.coord(r, 0, 0)
        for kk in range(16):
            assert a.coord(plan.a_index[r][kk], 0, 0) == (i, kk)
            assert b.coord(plan.b_index[r][kk], 0, 0) == (kk, j)
    # An A whose lanes hold other rows than D's: no thread-local plan (-> scratch path).
    swapped = LinearLayout(a.shape, a.reg, a.lane[::-1], a.warp)
    assert register_plan(out, swapped, b, 16) is None


def test_zero_accumulator_is_filled_not_staged() -> None:
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32", "sam": "i32", "sak": "i32",
           "sbk": "i32", "sbn": "i32"}
    program = compile_with(dot_strided_kernel, sig, 4, M=16, N=16, K=16, OUT_F16=False)
    assert dot_stats(program)[0]["c"] == "zero"
    assert "make_filled_simdgroup_matrix<float, 8, 8>(0.0f)" in program.source
    # The K loop's carried accumulator is staged.
    assert dot_stats(_tutorial("*fp16", (32, 32, 16), 4, "auto"))[0]["c"] == "staged"


def test_force_path_rejects_unknown_names() -> None:
    with pytest.raises(ValueError), force_path("tensor-cores"):
        pass
