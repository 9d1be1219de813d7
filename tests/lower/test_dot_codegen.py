"""tt.dot code structure without running it: the path chosen, MMAs, barriers per K step,
operand folding, the register plan — the numbers benchmarks/codegen_stats.py prints."""

from __future__ import annotations

import pytest

from benchmarks.codegen_stats import _tutorial, k_step_text, row
from msltrans.errors import MetalNonRecoverableError
from msltrans.layout import LinearLayout, decode_layout
from msltrans.lower import MslProgram
from msltrans.lower.dot.choose import force_path
from msltrans.lower.dot.registers import register_plan
from msltrans.workloads.dot_kernels import dot_acc_kernel, dot_strided_kernel, k_loop_variant_kernel
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
    # The #dot_op conversions fold into the dot's staging and the accumulator stays in
    # simdgroup matrices: one barrier before staging A and B, one after — nothing else in
    # the K loop (no C staging, no tile store, no D read-back).
    assert stats["c"] == "resident" and r["bar/step"] == 2
    step = k_step_text(program.source)
    assert step.count("folded into the tt.dot") == 2
    assert step.count("simdgroup_multiply_accumulate") == 1  # one site, inside MSL loops
    assert "sc[" not in step and "simdgroup_store" not in step
    assert "simdgroup_load(acc" not in step and "make_filled" not in step
    # A and B only in the loop, in tiles padded by 16 bytes a row (64 x 40 + 32 x 72 halves:
    # 9,728 bytes); C once after it, in that same region: two passes of 32 rows of 64 + 4
    # floats (8,704 bytes each), so the kernel needs no more than its operands.
    # Units are straight-line code.
    assert program.shared_bytes == 64 * 40 * 2 + 32 * 72 * 2
    assert stats["passes"] == "2"
    assert stats["lda"] == "40" and stats["ldb"] == "72" and stats["slots"] == "1"
    assert "for (uint u = msl_warp" not in program.source
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
    # The K loop's carried accumulator stays in simdgroup matrices (filled before the loop).
    program = _tutorial("*fp16", (32, 32, 16), 4, "auto")
    assert dot_stats(program)[0]["c"] == "resident"
    before_loop = program.source[:program.source.index(k_step_text(program.source))]
    assert "make_filled_simdgroup_matrix<float, 8, 8>(0.0f)" in before_loop


VARIANT_SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "out_ptr": "*fp32",
               "aux_ptr": "*fp32", "K": "i32"}


def _variant(mode: str, sig: dict[str, str] = VARIANT_SIG, path: str = "auto") -> MslProgram:
    return compile_with(k_loop_variant_kernel, sig, 4, path, M=32, N=32, BK=16, MODE=mode)


@pytest.mark.parametrize("mode", ["plain", "init"])
def test_resident_accumulator_k_step(mode: str) -> None:
    program = _variant(mode)
    (stats,) = dot_stats(program)
    assert (stats["c"], stats["barriers"]) == ("resident", "2")
    step = k_step_text(program.source)
    assert row(mode, program)["bar/step"] == 2
    assert "sc[" not in step and "simdgroup_store" not in step
    # The initial C is staged once before the loop (not at all for the zero splat).
    prologue = program.source[:program.source.index(step)]
    assert ("sc[" in prologue) == (mode == "init")
    check_msl_compiles(program.source)


@pytest.mark.parametrize("mode", ["scaled", "read"])
def test_accumulator_with_another_use_is_not_resident(mode: str) -> None:
    # `acc = dot(a, b, acc) * 2` (the result feeds a mulf, not the yield) and `total += acc`
    # (the iter arg has a second use): not resident. By default the result is laid out as
    # simdgroup fragments, so C comes from registers and D goes back to them (A and B
    # staged: 2 barriers per step); the staged simdgroup path stages C every K step.
    program = _variant(mode)
    (stats,) = dot_stats(program)
    assert (stats["path"], stats["c"], stats["barriers"]) == ("fragment", "regs", "2")
    assert row(mode, program)["bar/step"] == 2
    assert "acc_tiles" not in program.source and "sc[" not in program.source
    staged = _variant(mode, path="simdgroup")
    (stats,) = dot_stats(staged)
    assert (stats["path"], stats["c"], stats["barriers"]) == ("simdgroup", "staged", "3")
    assert row(mode, staged)["bar/step"] == 3
    assert "acc_tiles" not in staged.source


def test_fp16_accumulator_and_fallback_paths_are_not_resident() -> None:
    f16 = dict(VARIANT_SIG, a_ptr="*fp16", b_ptr="*fp16", out_ptr="*fp16")
    assert dot_stats(_variant("f16acc", f16))[0]["c"] == "staged"
    for path in ("registers", "scratch"):
        assert "acc_tiles" not in _variant("plain", path=path).source


def test_resident_decision_inspects_the_ir() -> None:
    from msltrans.ir import read_module
    from msltrans.lower.dot.resident import resident_accumulators
    from msltrans.lower.emitter import Emitter
    from msltrans.toolchain import to_ttgir

    def loops(mode: str) -> list[list[int]]:
        fn = read_module(to_ttgir(k_loop_variant_kernel, VARIANT_SIG, dict(
            M=32, N=32, BK=16, MODE=mode), 4)).function()
        em = Emitter()
        for block in fn.body.blocks:
            em.analyse(block)
        fors = [op for op in fn.body.blocks[0].ops if op.name == "scf.for"]
        return [[r.index for r in resident_accumulators(em, op)] for op in fors]

    (plain,) = loops("plain")
    assert len(plain) == 1
    assert loops("scaled") == [[]] and loops("read") == [[]]


def test_force_path_rejects_unknown_names() -> None:
    with pytest.raises(ValueError), force_path("tensor-cores"):
        pass


def test_attention_backward_d64_threadgroup_headroom() -> None:
    """Tutorial 06's backward at d64 (the project's own kernel, tutorial block sizes): its K
    loops' accumulators leave through their operand regions, so the kernel stays well under
    Metal's 32 KB (it took all of it while C moved through scratch of its own)."""
    from benchmarks.proxy.specialise import Arg, compile_specialised
    from msltrans.workloads.attention import flash_attn_bwd

    p16, p32, head = Arg("*fp16"), Arg("*fp32"), 64
    args = dict(q_ptr=p16, k_ptr=p16, v_ptr=p16, sm_scale=Arg("fp32", 0.125), do_ptr=p16,
                dq_ptr=p16, dk_ptr=p16, dv_ptr=p16, lse_ptr=p32, delta_ptr=p32,
                stride_z=Arg("i32", 16 * 1024 * head), stride_h=Arg("i32", 1024 * head),
                stride_tok=Arg("i32", head), stride_d=Arg("i32", 1), H=Arg("i32", 16),
                N_CTX=Arg("i32", 1024))
    program = compile_specialised(flash_attn_bwd, args, dict(
        BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32, SLICE=2, HEAD_DIM=head,
        CAUSAL=False), 4)
    assert {s["path"] for s in dot_stats(program)} == {"fragment", "simdgroup"}
    assert program.shared_bytes == 23040 and program.shared_bytes <= 24 * 1024
