"""sim/nan_canon.py on LLVM IR text: which results get Apple's NaN, and the functions left whole."""

from msltrans.sim.nan_canon import RAW_MARK, canonicalize_nans

IR = """define float @plain(float %a, float %b) {
  %s = fadd float %a, %b
  %f = call float @llvm.fma.f32(float %s, float %b, float %a)
  ret float %f
}

define linkonce_odr void @_ZN5metal8__detailNNMARK_mma_finishIfEEv(float %a, ptr %p) {
  %m = fmul float %a, %a
  %r = call float @llvm.fma.f32(float %m, float %a, float %a)
  store float %r, ptr %p
  ret void
}

define float @after(float %a) {
  %q = fdiv float %a, %a
  ret float %q
}
""".replace("NNMARK", f"{len(RAW_MARK) + len('_mma_finish')}{RAW_MARK}")


def test_arithmetic_results_get_the_canonical_nan() -> None:
    out = canonicalize_nans(IR).split("\n")
    assert "  %msl_nanraw.s = fadd float %a, %b" in out
    assert "  %msl_isnan.s = fcmp uno float %msl_nanraw.s, %msl_nanraw.s" in out
    assert "  %s = select i1 %msl_isnan.s, float 0x7FF8000000000000, float %msl_nanraw.s" in out
    assert any(line.startswith("  %msl_nanraw.f = call float @llvm.fma.f32(") for line in out)
    # the function after the marked one is rewritten again
    assert "  %msl_nanraw.q = fdiv float %a, %a" in out


def test_functions_named_raw_are_left_whole() -> None:
    out = canonicalize_nans(IR)
    assert "  %m = fmul float %a, %a" in out.split("\n")
    assert "msl_nanraw.m" not in out and "msl_nanraw.r" not in out
    marked = IR[IR.index("define linkonce_odr"):IR.index("define float @after")]
    assert marked in out
