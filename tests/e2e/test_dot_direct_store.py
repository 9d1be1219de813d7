"""A resident K loop's result stored from its simdgroup fragments straight to device memory
(lower/dot/direct_store.py): full tiles, ragged tiles and tiles straddling the bounds, fp32,
fp16 and bf16 outputs, bit for bit against the fp32 in-order fma chain rounded once to the
output type (the reference of the other dot tests) AND against the same kernel through the
staged epilogue (C through the operand region, then the store's own layout).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from benchmarks.proxy.specialise import Arg, compile_specialised
from msltrans.lower.dot.direct_store import staged_epilogue
from msltrans.workloads.dot_kernels import matmul_store_kernel
from tests.e2e.dot_support import (
    TRITON_PTR,
    as_f32,
    chain,
    compile_with,
    dot_stats,
    randn,
    run,
    same_bits,
)
from tests.support.diff import bf16_from_f32

INT_ARGS = ("M", "N", "K", "sa_m", "sa_k", "sb_k", "sb_n", "sc_m", "sc_n")
OUT = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}


def _reference(acc: np.ndarray, out: str) -> np.ndarray:
    if out == "bfloat16":
        return bf16_from_f32(acc)
    return acc.astype(OUT[out])


def _run(m: int, n: int, k: int, dtype: str, out: str, blocks: tuple[int, int, int],
         warps: int, masked: bool, staged: bool, bias: bool = False):
    """(program, C, the fp32 accumulator it rounds: the in-order chain, plus the bias and
    times 0.5 when `bias`, each one fp32 rounding)."""
    a, b = randn((m, k), dtype, 7), randn((k, n), dtype, 8)
    col_bias = randn((n,), "float32", 9)
    c = np.full((m, n), 0x7E00 if out != "float32" else np.nan, OUT[out])  # NaN-poisoned
    sig = {"a_ptr": TRITON_PTR[dtype], "b_ptr": TRITON_PTR[dtype], "c_ptr": TRITON_PTR[out],
           "bias_ptr": "*fp32"}
    sig.update(dict.fromkeys(INT_ARGS, "i32"))
    bm, bn, bk = blocks
    consts = dict(BM=bm, BN=bn, BK=bk, GROUP_M=2, MASKED=masked, BIAS=bias)
    if staged:
        with staged_epilogue():
            program = compile_with(matmul_store_kernel, sig, warps, **consts)
    else:
        program = compile_with(matmul_store_kernel, sig, warps, **consts)
    run(program, (-(-m // bm) * -(-n // bn),), a, b, c, col_bias, m, n, k, k, 1, n, 1, n, 1)
    acc = chain(as_f32(a, dtype), as_f32(b, dtype))
    if bias:
        acc = (acc + col_bias[None, :]) * np.float32(0.5)
    return program, c, acc


CASES = [  # (M, N, K, in, out, blocks, warps, masked)
    (64, 64, 48, "float16", "float16", (32, 32, 16), 4, True),       # full tiles, mask true
    (128, 64, 64, "float16", "float32", (64, 64, 32), 4, False),     # full tiles, no mask
    (100, 90, 40, "float16", "float16", (64, 64, 16), 4, True),      # ragged: straddling tiles
    (45, 23, 37, "float32", "float32", (16, 16, 8), 2, True),        # ragged, 2 warps
    (70, 40, 24, "bfloat16", "bfloat16", (32, 32, 8), 4, True),      # bf16 rounding
    (72, 50, 32, "float16", "bfloat16", (64, 32, 16), 4, True),      # rows and columns cut
    (130, 72, 32, "float16", "float16", (128, 64, 32), 4, True),     # 2 slots per simdgroup
    (136, 136, 16, "float16", "float32", (128, 128, 16), 8, True),   # 8 warps
]


@pytest.mark.parametrize(("m", "n", "k", "dtype", "out", "blocks", "warps", "masked"), CASES)
def test_direct_store_bits(m: int, n: int, k: int, dtype: str, out: str,
                           blocks: tuple[int, int, int], warps: int, masked: bool) -> None:
    program, c, acc = _run(m, n, k, dtype, out, blocks, warps, masked, staged=False)
    (stats,) = dot_stats(program)
    assert stats["c"] == "resident" and stats["epilogue"] == "direct"
    assert program.shared_bytes == int(stats["operand_bytes"])  # C adds nothing
    assert same_bits(c, _reference(acc, out))
    staged_program, staged_c, _ = _run(m, n, k, dtype, out, blocks, warps, masked, staged=True)
    assert dot_stats(staged_program)[0]["epilogue"] == "staged"
    assert same_bits(c, staged_c)


@pytest.mark.parametrize(("m", "n", "out"), [(64, 64, "float16"), (90, 70, "bfloat16"),
                                             (45, 40, "float32")])
def test_direct_store_with_an_epilogue(m: int, n: int, out: str) -> None:
    """A bias load and a scale between the loop and the store (an Inductor GEMM template's
    epilogue): the bias chain is computed again in the fragments' layout, the add and the
    multiply run there, bits as the staged epilogue and the fp32 reference."""
    program, c, acc = _run(m, n, 48, "float16", out, (32, 32, 16), 4, True, staged=False,
                           bias=True)
    assert dot_stats(program)[0]["epilogue"] == "direct"
    assert same_bits(c, _reference(acc, out))
    staged_program, staged_c, _ = _run(m, n, 48, "float16", out, (32, 32, 16), 4, True,
                                       staged=True, bias=True)
    assert dot_stats(staged_program)[0]["epilogue"] == "staged"
    assert same_bits(c, staged_c)


def test_direct_store_code() -> None:
    """Barriers only in the K loop; the store's accesses are the fragments' pairs (one 4-byte
    access each where a launch's specialisation proves the pointers aligned), one branch per
    thread choosing the unmasked stores."""
    args = dict(a_ptr=Arg("*fp16"), b_ptr=Arg("*fp16"), c_ptr=Arg("*fp16"), bias_ptr=Arg("*fp32"))
    args.update({name: Arg("i32", 1 if name in ("sa_k", "sb_n", "sc_n") else 4096)
                 for name in INT_ARGS})
    program = compile_specialised(matmul_store_kernel, args, dict(
        BM=64, BN=64, BK=32, GROUP_M=8, MASKED=True, BIAS=False), 4)
    src = program.source
    tail = src[src.index("direct epilogue"):]
    assert "threadgroup_barrier" not in tail and "simdgroup_store" not in tail
    assert len(re.findall(r"if \(tile_in_bounds_\d+\)", tail)) == 1
    stores = re.findall(r"// msltrans-mem: store elements=(\d+) width=(\d+) bytes=(\d+)", tail)
    assert stores == [("32", "2", "4")]  # 64x64 / 128 threads, pairs of consecutive columns
