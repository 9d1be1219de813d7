"""tt.dot inside the K loop (scf.for carries the accumulator): the grouped-order tiled matmul
of msltrans/workloads/grouped_matmul.py (tutorial 03's workload), in fp16 and fp32, against
torch and bit-exactly against the fp32 in-order fma chain over the whole K; ragged shapes (M,
N, K not multiples of the block: the kernel wraps rows with `% M` and masks the K tail),
transposed inputs via strides, and K-loop trip counts 1..16 (a sample here, the full sweep
under `-m slow`).

Tolerance vs torch (stated): the kernel stores fp16, so its output must be torch's fp32
matmul of the widened inputs rounded to fp16, within one fp16 rounding (rtol 2**-10,
atol 1e-3); `matmul_f32_kernel` (the same kernel storing the fp32 accumulator) must match
torch's fp32 matmul to rtol 1e-5 / atol 1e-5 * sqrt(K) and the chain bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from msltrans.lower.dot.direct_store import staged_epilogue
from msltrans.workloads.dot_kernels import attention_like_kernel, matmul_f32_kernel
from msltrans.workloads.grouped_matmul import grouped_matmul_kernel
from tests.e2e.dot_support import TRITON_PTR, chain, compile_with, dot_stats, randn, run, same_bits

INT_ARGS = ("M", "N", "K", "sa_m", "sa_k", "sb_k", "sb_n", "sc_m", "sc_n")


def _operands(m: int, n: int, k: int, dtype: str, a_t: bool, b_t: bool, seed: int):
    """A [M, K] and B [K, N] values plus the arrays holding them (transposed in memory when
    asked) and their element strides."""
    a, b = randn((m, k), dtype, seed), randn((k, n), dtype, seed + 1)
    a_mem = np.ascontiguousarray(a.T) if a_t else a
    b_mem = np.ascontiguousarray(b.T) if b_t else b
    sa = (1, m) if a_t else (k, 1)
    sb = (1, k) if b_t else (n, 1)
    return a, b, a_mem, b_mem, sa, sb


def _matmul(kernel, m: int, n: int, k: int, dtype: str, blocks: tuple[int, int, int],
            num_warps: int, path: str, out_dtype, a_t: bool = False, b_t: bool = False,
            group: int = 2, seed: int = 0, **extra):
    a, b, a_mem, b_mem, sa, sb = _operands(m, n, k, dtype, a_t, b_t, seed)
    c = np.full((m, n), np.nan, out_dtype)
    sig = {"a_ptr": TRITON_PTR[dtype], "b_ptr": TRITON_PTR[dtype],
           "c_ptr": "*fp16" if out_dtype == np.float16 else "*fp32"}
    sig.update(dict.fromkeys(INT_ARGS, "i32"))
    bm, bn, bk = blocks
    program = compile_with(kernel, sig, num_warps, path, BM=bm, BN=bn, BK=bk, GROUP_M=group,
                           **extra)
    grid = (-(-m // bm) * -(-n // bn),)
    run(program, grid, a_mem, b_mem, c, m, n, k, *sa, *sb, n, 1)
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    return program, c, fa, fb


def _torch(fa: np.ndarray, fb: np.ndarray) -> np.ndarray:
    return (torch.from_numpy(fa) @ torch.from_numpy(fb)).numpy()


@pytest.mark.parametrize(("dtype", "shape", "blocks", "num_warps", "path"), [
    ("float16", (64, 64, 64), (32, 32, 16), 4, "auto"),
    ("float16", (48, 40, 56), (32, 16, 16), 4, "registers"),
    ("float32", (64, 32, 48), (32, 32, 16), 4, "auto"),
    ("float32", (50, 37, 45), (16, 32, 16), 2, "auto"),
])
def test_grouped_matmul(dtype: str, shape: tuple[int, int, int], blocks: tuple[int, int, int],
                        num_warps: int, path: str) -> None:
    m, n, k = shape
    program, c, fa, fb = _matmul(grouped_matmul_kernel, m, n, k, dtype, blocks, num_warps, path,
                                 np.float16, EPILOGUE="")
    assert dot_stats(program)[0]["path"] == ("simdgroup" if path == "auto" else path)
    assert same_bits(c, chain(fa, fb).astype(np.float16))
    np.testing.assert_allclose(c.astype(np.float32), _torch(fa, fb).astype(np.float16)
                               .astype(np.float32), rtol=2**-10, atol=1e-3)


@pytest.mark.parametrize(("dtype", "shape", "blocks", "num_warps", "passes"), [
    ("float16", (100, 90, 64), (64, 64, 32), 4, 2),
    ("float16", (150, 70, 48), (128, 64, 32), 4, 4),
    ("float32", (70, 64, 40), (64, 64, 16), 4, 2),
])
def test_epilogue_passes_in_the_operand_region(dtype: str, shape: tuple[int, int, int],
                                               blocks: tuple[int, int, int], num_warps: int,
                                               passes: int) -> None:
    """The staged epilogue (what runs where the store cannot take the fragments directly:
    lower/dot/direct_store.py): the resident accumulator leaves the loop through the A/B
    region in row passes (no threadgroup memory beyond the operands'), edge tiles masked:
    bits of the in-order chain."""
    m, n, k = shape
    with staged_epilogue():
        program, c, fa, fb = _matmul(grouped_matmul_kernel, m, n, k, dtype, blocks, num_warps,
                                     "auto", np.float16, EPILOGUE="")
    (stats,) = dot_stats(program)
    assert stats["c"] == "resident" and int(stats["passes"]) == passes
    assert program.shared_bytes == int(stats["scratch_bytes"])   # the operands' own need
    assert same_bits(c, chain(fa, fb).astype(np.float16))


def test_grouped_matmul_leaky_transposed() -> None:
    m, n, k = 32, 32, 40
    program, c, fa, fb = _matmul(grouped_matmul_kernel, m, n, k, "float16", (16, 16, 16), 4,
                                 "auto", np.float16, a_t=True, b_t=True, EPILOGUE="leaky")
    acc = chain(fa, fb)
    # leaky multiplies by the fp32 constant 0.01 (one rounding), then rounds to fp16.
    ref = np.where(acc >= 0, acc, np.float32(0.01) * acc).astype(np.float16)
    assert same_bits(c, ref)


F32_CASES = [  # (M, N, K, blocks, num_warps, path, a_t, b_t)
    (32, 32, 32, (32, 32, 8), 4, "simdgroup", False, False),   # 4 K steps
    (45, 23, 37, (16, 16, 8), 2, "simdgroup", False, False),   # ragged, masked K tail
    (40, 24, 24, (16, 8, 8), 4, "registers", True, False),     # A column-major
    (24, 40, 20, (8, 16, 4), 1, "auto", False, True),          # B column-major, K=4 blocks
    (16, 16, 9, (16, 16, 8), 4, "scratch", True, True),        # K tail of one element
]


@pytest.mark.parametrize(("m", "n", "k", "blocks", "num_warps", "path", "a_t", "b_t"),
                         F32_CASES)
def test_fp32_k_loop_bit_exact(m: int, n: int, k: int, blocks: tuple[int, int, int],
                               num_warps: int, path: str, a_t: bool, b_t: bool) -> None:
    _, c, fa, fb = _matmul(matmul_f32_kernel, m, n, k, "float32", blocks, num_warps, path,
                           np.float32, a_t, b_t, group=3)
    assert same_bits(c, chain(fa, fb))
    np.testing.assert_allclose(c, _torch(fa, fb), rtol=1e-5, atol=1e-5 * np.sqrt(k))


def _trip_count_case(trips: int, path: str) -> None:
    bk = 8
    k = trips * bk - (3 if trips > 1 else 0)  # a masked tail on all but the 1-step case
    _, c, fa, fb = _matmul(matmul_f32_kernel, 16, 16, k, "float32", (16, 16, bk), 2, path,
                           np.float32, seed=trips)
    assert same_bits(c, chain(fa, fb))


@pytest.mark.parametrize("trips", [1, 3, 16])
def test_k_loop_trip_counts_sample(trips: int) -> None:
    _trip_count_case(trips, "auto")


@pytest.mark.slow
@pytest.mark.parametrize("path", ["simdgroup", "registers", "scratch"])
@pytest.mark.parametrize("trips", range(1, 17))
def test_k_loop_trip_counts_sweep(trips: int, path: str) -> None:
    _trip_count_case(trips, path)


@pytest.mark.parametrize(("dtype", "path"), [("float32", "auto"), ("float16", "auto"),
                                             ("float32", "registers")])
def test_chained_dots_in_a_loop(dtype: str, path: str) -> None:
    m, bn, d, n_kv = 16, 16, 16, 48
    q, k, v = randn((m, d), dtype, 20), randn((n_kv, d), dtype, 21), randn((n_kv, d), dtype, 22)
    scale = 0.125
    out = np.zeros((m, d), np.float32)
    sig = {"q_ptr": TRITON_PTR[dtype], "k_ptr": TRITON_PTR[dtype], "v_ptr": TRITON_PTR[dtype],
           "out_ptr": "*fp32", "n_kv": "i32", "scale": "fp32"}
    program = compile_with(attention_like_kernel, sig, 4, path, M=m, BLOCK_N=bn, D=d)
    run(program, (1,), q, k, v, out, n_kv, scale)
    fq, fk, fv = (x.astype(np.float32) for x in (q, k, v))
    acc = np.zeros((m, d), np.float32)
    for s0 in range(0, n_kv, bn):
        p = (chain(fq, fk[s0:s0 + bn].T) * np.float32(scale)).astype(dtype).astype(np.float32)
        acc = chain(p, fv[s0:s0 + bn], acc)
    assert same_bits(out, acc)
