"""tt.dot, one K step: every path gives the in-order fma chain's bits (fp32, fp16, bf16),
int8 is exact, strided / transposed / batched / chained operands, and the refusals.

Paths are forced with `force_path` so each is checked on its own; "auto" is what users get.
Tolerance vs torch (stated): fp32-accumulated results equal torch's fp32 matmul of the
exactly-widened inputs to rtol 1e-5 / atol 1e-5 (summation order only); fp16 outputs to one
fp16 rounding (rtol 2**-10, atol 1e-3).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from msltrans.errors import MetalNonRecoverableError
from msltrans.workloads.dot_kernels import (
    batched_dot_kernel,
    chained_dot_kernel,
    dot_acc_kernel,
    dot_strided_kernel,
)
from tests.e2e.dot_support import (
    TRITON_PTR,
    as_f32,
    chain,
    compile_with,
    dot_stats,
    int_dot,
    randn,
    run,
    same_bits,
)
from tests.support.run_kernel import compile_ttgir

ACC_SIG = {n: "*fp32" for n in ("a_ptr", "b_ptr", "c_ptr", "out_ptr")}


def _acc_sig(in_dtype: str, acc_dtype: str) -> dict[str, str]:
    return {"a_ptr": TRITON_PTR[in_dtype], "b_ptr": TRITON_PTR[in_dtype],
            "c_ptr": TRITON_PTR[acc_dtype], "out_ptr": TRITON_PTR[acc_dtype]}


FP32_CASES = [  # (path, M, N, K, num_warps)
    ("simdgroup", 16, 16, 16, 1), ("simdgroup", 32, 64, 16, 4), ("simdgroup", 64, 32, 32, 2),
    ("simdgroup", 16, 16, 8, 8),
    ("registers", 16, 16, 16, 1), ("registers", 32, 64, 16, 4), ("registers", 16, 32, 8, 8),
    ("scratch", 32, 16, 16, 4), ("scratch", 16, 16, 32, 2),
    ("auto", 4, 16, 4, 1), ("auto", 16, 2, 16, 2), ("auto", 32, 16, 2, 4),
]


@pytest.mark.parametrize(("path", "m", "n", "k", "num_warps"), FP32_CASES)
def test_fp32_dot_is_the_fma_chain(path: str, m: int, n: int, k: int, num_warps: int) -> None:
    a, b, c = randn((m, k), "float32", 1), randn((k, n), "float32", 2), randn((m, n), "float32", 3)
    out = np.zeros((m, n), np.float32)
    program = compile_with(dot_acc_kernel, ACC_SIG, num_warps, path, M=m, N=n, K=k)
    (stats,) = dot_stats(program)
    if path != "auto":
        assert stats["path"] == path
    elif m % 8 or n % 8 or k % 8:
        assert stats["path"] == "registers"
    run(program, (1,), a, b, c, out)
    assert same_bits(out, chain(a, b, c))


@pytest.mark.parametrize(("in_dtype", "acc_dtype"), [
    ("float16", "float32"), ("bfloat16", "float32"), ("float16", "float16")])
@pytest.mark.parametrize("path", ["simdgroup", "registers"])
def test_half_inputs_accumulate_in_fp32(in_dtype: str, acc_dtype: str, path: str) -> None:
    m, n, k = 32, 16, 32
    a, b = randn((m, k), in_dtype, 4), randn((k, n), in_dtype, 5)
    c = randn((m, n), acc_dtype, 6)
    out = np.zeros((m, n), np.float16 if acc_dtype == "float16" else np.float32)
    program = compile_with(dot_acc_kernel, _acc_sig(in_dtype, acc_dtype), 4, path, M=m, N=n, K=k)
    run(program, (1,), a, b, c, out)
    fa, fb = as_f32(a, in_dtype), as_f32(b, in_dtype)
    # Products of fp16/bf16 are exact in fp32, so the chain is the fp32 chain on widened inputs;
    # an fp16 accumulator is widened first and the result rounded once at the end.
    ref = chain(fa, fb, c.astype(np.float32)).astype(out.dtype)
    assert same_bits(out, ref)
    torch_ref = (torch.from_numpy(fa) @ torch.from_numpy(fb) + torch.from_numpy(c).float())
    if acc_dtype == "float16":
        np.testing.assert_allclose(out.astype(np.float32), torch_ref.half().float().numpy(),
                                   rtol=2**-10, atol=1e-3)
    else:
        np.testing.assert_allclose(out, torch_ref.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", ["auto", "scratch"])
def test_int8_dot_is_exact(path: str) -> None:
    m, n, k = 16, 32, 64
    a, b = randn((m, k), "int8", 7), randn((k, n), "int8", 8)
    c = np.random.default_rng(9).integers(-2**31, 2**31, (m, n), dtype=np.int64).astype(np.int32)
    out = np.zeros((m, n), np.int32)
    program = compile_with(dot_acc_kernel, _acc_sig("int8", "int32"), 4, path, M=m, N=n, K=k)
    assert dot_stats(program)[0]["path"] == ("registers" if path == "auto" else path)
    run(program, (1,), a, b, c, out)
    assert same_bits(out, int_dot(a, b, c))  # includes int32 wrap-around from c's extremes


def test_int8_never_takes_simdgroup_matrices() -> None:
    with pytest.raises(MetalNonRecoverableError, match="forced simdgroup"):
        compile_with(dot_acc_kernel, _acc_sig("int8", "int32"), 4, "simdgroup", M=16, N=16, K=16)


@pytest.mark.parametrize(("a_t", "b_t", "dtype", "path"), [
    (True, False, "float32", "simdgroup"), (False, True, "float32", "registers"),
    (True, True, "float16", "simdgroup"), (True, True, "float32", "auto"),
])
def test_strided_operands(a_t: bool, b_t: bool, dtype: str, path: str) -> None:
    """A column-major / B column-major through runtime strides (tl.load is upstream of the
    dot: the dot sees the same values whatever the memory order)."""
    m, n, k = 32, 16, 16
    a, b = randn((m, k), dtype, 10), randn((k, n), dtype, 11)
    a_mem = np.ascontiguousarray(a.T) if a_t else a
    b_mem = np.ascontiguousarray(b.T) if b_t else b
    sam, sak = (1, m) if a_t else (k, 1)
    sbk, sbn = (1, k) if b_t else (n, 1)
    out = np.zeros((m, n), np.float16 if dtype == "float16" else np.float32)
    sig = {"a_ptr": TRITON_PTR[dtype], "b_ptr": TRITON_PTR[dtype],
           "out_ptr": "*fp16" if dtype == "float16" else "*fp32",
           "sam": "i32", "sak": "i32", "sbk": "i32", "sbn": "i32"}
    program = compile_with(dot_strided_kernel, sig, 4, path, M=m, N=n, K=k,
                           OUT_F16=dtype == "float16")
    run(program, (1,), a_mem, b_mem, out, sam, sak, sbk, sbn)
    zero = np.zeros((m, n), np.float32)
    assert same_bits(out, chain(a.astype(np.float32), b.astype(np.float32), zero)
                     .astype(out.dtype))


@pytest.mark.parametrize(("path", "bsz", "m", "n", "k", "num_warps"), [
    ("simdgroup", 2, 16, 16, 16, 4), ("registers", 2, 16, 8, 16, 4), ("scratch", 4, 8, 8, 8, 2),
    ("auto", 2, 4, 16, 8, 1),
])
def test_batched_3d_dot(path: str, bsz: int, m: int, n: int, k: int, num_warps: int) -> None:
    a, b = randn((bsz, m, k), "float32", 12), randn((bsz, k, n), "float32", 13)
    c = randn((bsz, m, n), "float32", 14)
    out = np.zeros((bsz, m, n), np.float32)
    program = compile_with(batched_dot_kernel, ACC_SIG, num_warps, path, B=bsz, M=m, N=n, K=k)
    run(program, (1,), a, b, c, out)
    assert same_bits(out, chain(a, b, c))


@pytest.mark.parametrize(("dtype", "path"), [("float32", "auto"), ("float32", "registers"),
                                             ("float16", "auto")])
def test_chained_dots(dtype: str, path: str) -> None:
    m, n, d = 16, 32, 16
    q, kk, v = randn((m, d), dtype, 15), randn((n, d), dtype, 16), randn((n, d), dtype, 17)
    out = np.zeros((m, d), np.float32)
    sig = {"q_ptr": TRITON_PTR[dtype], "k_ptr": TRITON_PTR[dtype], "v_ptr": TRITON_PTR[dtype],
           "out_ptr": "*fp32"}
    program = compile_with(chained_dot_kernel, sig, 4, path, M=m, N=n, D=d)
    assert len(dot_stats(program)) == 2
    run(program, (1,), q, kk, v, out)
    s = chain(q.astype(np.float32), kk.T.astype(np.float32)).astype(q.dtype)
    assert same_bits(out, chain(s.astype(np.float32), v.astype(np.float32)))


# ---- refusals -------------------------------------------------------------------------------
def _with_precision(tmp_path: Path, precision: str) -> Path:
    from msltrans.toolchain import to_ttgir

    text = str(to_ttgir(dot_acc_kernel, ACC_SIG, {"M": 16, "N": 16, "K": 16}, 4))
    text, n = re.subn(r"(tt\.dot %\w+, %\w+, %\w+)", rf"\1, inputPrecision = {precision}", text)
    assert n == 1
    path = tmp_path / "dot.ttgir"
    path.write_text(text)
    return path


@pytest.mark.parametrize("precision", ["tf32", "tf32x3", "bf16x3"])
def test_tf32_is_refused(tmp_path: Path, precision: str) -> None:
    with pytest.raises(MetalNonRecoverableError, match="Apple has no tf32.*input_precision='ieee'"):
        compile_ttgir(_with_precision(tmp_path, precision))


def test_explicit_ieee_is_accepted(tmp_path: Path) -> None:
    assert dot_stats(compile_ttgir(_with_precision(tmp_path, "ieee")))


def test_fp8_dot_is_the_fp16_dot(tmp_path: Path) -> None:
    # fp8 operands are widened to fp16 where they are staged (tests/e2e/test_fp8.py runs
    # them); the dot itself is the fp16 one.
    from msltrans.toolchain import to_ttgir

    text = str(to_ttgir(dot_acc_kernel, _acc_sig("float16", "float32"),
                        {"M": 16, "N": 16, "K": 16}, 4)).replace("f16", "f8E5M2")
    path = tmp_path / "dot_fp8.ttgir"
    path.write_text(text)
    source = compile_ttgir(path).source
    assert "msl_f8e5m2_to_half" in source


def test_fp64_follows_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    sig = {n: "*fp64" for n in ACC_SIG}
    monkeypatch.setenv("MSLTRANS_FP64", "refuse")
    with pytest.raises(MetalNonRecoverableError, match="fp64"):
        compile_with(dot_acc_kernel, sig, 4, M=16, N=16, K=16)
    monkeypatch.delenv("MSLTRANS_FP64")
    with pytest.warns(UserWarning, match="fp64 downcast"):
        program = compile_with(dot_acc_kernel, sig, 4, M=16, N=16, K=16)
    assert dot_stats(program)[0]["path"] == "simdgroup"  # computed as the fp32 dot


@pytest.mark.parametrize(("k", "warned"), [(64, False), (256, True)])
def test_register_path_warns_past_4_kb_of_operands(k: int, warned: bool) -> None:
    """An int8 dot takes the register path (no integer simdgroup matrices). 64x64 on one warp
    keeps 2048 + 256 operand bytes a thread at K = 64 (silent) and 8192 + 1024 at K = 256:
    then a MetalPerformanceWarning names the dot, its source line and why."""
    import warnings

    from msltrans.errors import MetalPerformanceWarning
    from tests.support.run_kernel import compile_kernel

    a, b = np.zeros((64, k), np.int8), np.zeros((k, 64), np.int8)
    c = np.zeros((64, 64), np.int32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = compile_kernel(dot_acc_kernel, (a, b, c, c.copy()), 1, M=64, N=64, K=k)
    assert "path=registers" in program.source
    said = [str(w.message) for w in caught if issubclass(w.category, MetalPerformanceWarning)]
    if not warned:
        assert said == []
        return
    assert len(said) == 1
    assert f"tt.dot 64x64x{k} at dot_kernels.py:" in said[0]
    assert "9216 bytes of operands a thread" in said[0]
    assert "no integer type" in said[0] and "Smaller blocks" in said[0]


@pytest.mark.parametrize(("m", "n", "k", "num_warps"), [(32, 64, 16, 4), (64, 32, 32, 2)])
def test_simdgroup_dot_scratch_is_aligned_for_its_uint4_accesses(
        monkeypatch: pytest.MonkeyPatch, m: int, n: int, k: int, num_warps: int) -> None:
    """The dot stages tiles through threadgroup scratch with uint4 accesses: the scratch is
    declared with that alignment (kernel.metal.j2), which the simulator's opt-in alignment
    check (MSLTRANS_SIM_ALIGNMENT_CHECK=1) holds it to."""
    monkeypatch.setenv("MSLTRANS_SIM_ALIGNMENT_CHECK", "1")
    a, b, c = randn((m, k), "float32", 1), randn((k, n), "float32", 2), randn((m, n), "float32", 3)
    out = np.zeros((m, n), np.float32)
    program = compile_with(dot_acc_kernel, ACC_SIG, num_warps, "simdgroup", M=m, N=n, K=k)
    assert "threadgroup uint4 msl_scratch_quads[" in program.source
    run(program, (1,), a, b, c, out)
    assert same_bits(out, chain(a, b, c))
