"""A loop-invariant dot operand staged before one loop is not staged again before the next
loop of the same block when nothing between them can write threadgroup memory
(msltrans/lower/dot/fragment_loop.py); anything that can, keeps the second copy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.e2e.dot_support import dot_stats
from tests.e2e.fragment_kernels import two_sweeps_kernel
from tests.support.run_kernel import compile_kernel, dispatch

KEPT = "the copy the previous loop staged is still at"
STAGED = "hoisted tiles written"


def _reference(q: np.ndarray, k: np.ndarray, bm: int, bn: int, between: int) -> np.ndarray:
    q64, k64 = q.astype(np.float64), k.astype(np.float64)
    half = k.shape[0] // 2
    out = np.zeros((q.shape[0], bn))
    for g in range(q.shape[0] // bm):
        rows = slice(g * bm, (g + 1) * bm)
        acc = np.zeros((bm, bn))
        for start in range(0, half, bn):
            acc += q64[rows] @ k64[start:start + bn].T * 0.5
        if between == 1:
            acc -= acc.max(axis=0)[None, :]
        for start in range(half, k.shape[0], bn):
            acc += q64[rows] @ k64[start:start + bn].T * 0.5
        out[rows] = acc
    return out


@pytest.mark.parametrize(("between", "stagings"), [(0, 1), (1, 2), (2, 2)])
def test_second_loop_keeps_the_first_loops_copy(between: int, stagings: int) -> None:
    bm, bn, head, n = 32, 32, 64, 128
    rng = np.random.default_rng(5)
    q = rng.standard_normal((2 * bm, head)).astype(np.float16)
    k = rng.standard_normal((n, head)).astype(np.float16)
    o = np.full((2 * bm, bn), np.nan, dtype=np.float32)
    args = (q, k, o, n)
    program = compile_kernel(two_sweeps_kernel, args, 4, HEAD=head, BM=bm, BN=bn,
                             BETWEEN=between)
    assert [s["path"] for s in dot_stats(program)] == ["fragment", "fragment"]
    assert program.source.count(STAGED) == stagings
    assert program.source.count(KEPT) == 2 - stagings
    dispatch(program, (2,), args)
    # fp16 products are exact in fp32; the fp32 sums of 64 terms round (|terms| <= ~16)
    np.testing.assert_allclose(o, _reference(q, k, bm, bn, between), rtol=0, atol=2e-3)


def test_kept_copy_has_no_race() -> None:
    from msltrans.sim import check_races, compile_shader

    bm, bn, head, n = 32, 32, 64, 128
    rng = np.random.default_rng(6)
    q = rng.standard_normal((2 * bm, head)).astype(np.float16)
    k = rng.standard_normal((n, head)).astype(np.float16)
    o = np.zeros((2 * bm, bn), dtype=np.float32)
    args = (q, k, o, n)
    program = compile_kernel(two_sweeps_kernel, args, 4, HEAD=head, BM=bm, BN=bn, BETWEEN=0)
    assert KEPT in program.source
    kernel = getattr(compile_shader(program.source), program.kernel_name)
    t = program.threads_per_group
    check_races(kernel, *program.engine_args(args), threads=(2 * t, 1, 1),
                group_size=(t, 1, 1), arg_casts=program.arg_casts,
                buffer_alignment=program.sim_alignment)


def test_tutorial_causal_forward_stages_q_once() -> None:
    from msltrans.workloads.attention import flash_attn_fwd

    z, h, n, d = 1, 2, 256, 64
    q = np.zeros((z, h, n, d), np.float16)
    lse = np.zeros((z * h, n), np.float32)
    program = compile_kernel(flash_attn_fwd, (0.125, lse, z, h, q, q.copy(), q.copy(),
                                              q.copy(), n),
                             4, HEAD_DIM=d, BLOCK_M=64, BLOCK_N=32, FP8=False, CAUSAL=True)
    assert program.source.count(STAGED) == 1 and program.source.count(KEPT) == 1
