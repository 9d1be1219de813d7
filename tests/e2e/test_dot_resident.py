"""K loops whose dot accumulator stays in simdgroup matrices (ops_dot_resident.py), and the
variants that must keep the per-dot path, all bit-exact against the in-order fp32 fma chain
(tests/support/fma.py's fma_chain_matmul): the resident path changes where the accumulator
lives between K steps, never its bits.
"""

from __future__ import annotations

import numpy as np
import pytest

from msltrans.workloads.dot_kernels import batched_k_loop_kernel, k_loop_variant_kernel
from tests.e2e.dot_support import TRITON_PTR, compile_with, dot_stats, randn, run, same_bits
from tests.support.fma import fma_chain_matmul

M, N, BK = 32, 32, 16


def _variant(mode: str, k: int, dtype: str = "float32", num_warps: int = 4,
             path: str = "auto"):
    a, b = randn((M, max(k, 1)), dtype, 1)[:, :k], randn((max(k, 1), N), dtype, 2)[:k]
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    c = randn((M, N), "float32", 3)
    out_t = np.float16 if mode == "f16acc" else np.float32
    out, aux = np.full((M, N), np.nan, out_t), np.full((M, N), np.nan, np.float32)
    sig = {"a_ptr": TRITON_PTR[dtype], "b_ptr": TRITON_PTR[dtype], "c_ptr": "*fp32",
           "out_ptr": "*fp16" if mode == "f16acc" else "*fp32", "aux_ptr": "*fp32",
           "K": "i32"}
    program = compile_with(k_loop_variant_kernel, sig, num_warps, path, M=M, N=N, BK=BK,
                           MODE=mode)
    run(program, (1,), a, b, c, out, aux, k)
    return program, a.astype(np.float32), b.astype(np.float32), c, out, aux


def _steps(k: int) -> list[slice]:
    return [slice(k0, k0 + BK) for k0 in range(0, k, BK)]


@pytest.mark.parametrize(("dtype", "k"), [("float32", 64), ("float16", 48), ("float32", 0)])
def test_resident_accumulator_from_zeros(dtype: str, k: int) -> None:
    program, fa, fb, _, out, _ = _variant("plain", k, dtype)
    assert dot_stats(program)[0]["c"] == "resident"
    assert same_bits(out, fma_chain_matmul(fa, fb, np.zeros((M, N), np.float32)))


@pytest.mark.parametrize("k", [48, 0])
def test_resident_accumulator_from_a_loaded_c(k: int) -> None:
    # The prologue stages C once; with zero trips the result is C itself, bit for bit.
    program, fa, fb, c, out, _ = _variant("init", k)
    assert dot_stats(program)[0]["c"] == "resident"
    assert same_bits(out, fma_chain_matmul(fa, fb, c))


# Not resident: by default the result is laid out as simdgroup fragments (C and D in
# registers, lower/dot/fragment_mma.py); forced, the staged simdgroup path. Same bits.
NOT_RESIDENT = [("auto", "regs"), ("simdgroup", "staged")]


@pytest.mark.parametrize(("path", "c"), NOT_RESIDENT)
def test_scaled_accumulator_keeps_the_per_dot_path(path: str, c: str) -> None:
    program, fa, fb, _, out, _ = _variant("scaled", 48, path=path)
    assert dot_stats(program)[0]["c"] == c
    acc = np.zeros((M, N), np.float32)
    for s in _steps(48):
        acc = fma_chain_matmul(fa[:, s], fb[s], acc) * np.float32(2.0)
    assert same_bits(out, acc)


@pytest.mark.parametrize(("path", "c"), NOT_RESIDENT)
def test_accumulator_read_in_the_loop_keeps_the_per_dot_path(path: str, c: str) -> None:
    program, fa, fb, _, out, aux = _variant("read", 48, path=path)
    assert dot_stats(program)[0]["c"] == c
    acc, total = np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)
    for s in _steps(48):
        total = total + acc
        acc = fma_chain_matmul(fa[:, s], fb[s], acc)
    assert same_bits(out, acc) and same_bits(aux, total)


def test_fp16_accumulator_keeps_the_per_dot_path() -> None:
    # Rounded to fp16 at the end of every tt.dot: resident fp32 matrices would skip that.
    program, fa, fb, _, out, _ = _variant("f16acc", 48, "float16")
    assert dot_stats(program)[0]["c"] == "staged"
    acc = np.zeros((M, N), np.float16)
    for s in _steps(48):
        acc = fma_chain_matmul(fa[:, s], fb[s], acc.astype(np.float32)).astype(np.float16)
    assert same_bits(out, acc)


def test_batched_resident_accumulators_two_units_per_simdgroup() -> None:
    bsz, m, n, bk, k = 2, 16, 16, 8, 24
    a, b = randn((bsz, m, k), "float32", 4), randn((bsz, k, n), "float32", 5)
    out = np.full((bsz, m, n), np.nan, np.float32)
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32", "K": "i32"}
    program = compile_with(batched_k_loop_kernel, sig, 1, B=bsz, M=m, N=n, BK=bk)
    (stats,) = dot_stats(program)
    assert stats["c"] == "resident" and (stats["units"], stats["warps"]) == ("2", "1")
    run(program, (1,), a, b, out, k)
    assert same_bits(out, np.stack([fma_chain_matmul(a[i], b[i]) for i in range(bsz)]))
