"""A max/min whose zero sign no use sees lowers to plain fmax/fmin (analysis/zero_sign.py).

The faster lowering is checked against the exact one (msl_maxnum/msl_minnum, which order
-0.0 below +0.0): the same kernels built both ways give the same output bits on rows made of
signed zeros, NaNs and infinities. Kernels where the sign can be seen keep the helpers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.analysis import zero_sign
from msltrans.lower.elementwise import ops_arith_float
from msltrans.workloads.attention import flash_attn_fwd
from msltrans.workloads.attention_plain import attn_fwd
from msltrans.workloads.softmax_layernorm import row_softmax_kernel
from tests.support.run_kernel import compile_kernel, dispatch


@triton.jit
def _exp_minus_min(x_ptr, y_ptr, N: tl.constexpr):
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + cols)
    tl.store(y_ptr + cols, tl.exp2(tl.min(x, axis=0) - x))


@triton.jit
def _exp_minus_pairwise_max(a_ptr, b_ptr, y_ptr, N: tl.constexpr):
    cols = tl.arange(0, N)
    a = tl.load(a_ptr + cols)
    b = tl.load(b_ptr + cols)
    m = tl.maximum(a, b)
    y = tl.exp((a - m) * 0.5) + tl.where(b > m, 1.0, 0.0)
    tl.store(y_ptr + cols, y)


@triton.jit
def _log_softmax(x_ptr, y_ptr, N: tl.constexpr):
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + cols)
    shifted = x - tl.max(x, axis=0)  # stored: its zero sign is part of the output
    tl.store(y_ptr + cols, shifted - tl.log(tl.sum(tl.exp(shifted), axis=0)))


@triton.jit
def _row_max(x_ptr, y_ptr, N: tl.constexpr):
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + cols)
    m = tl.max(x, axis=0)
    tl.store(y_ptr + cols, tl.exp(x - m))
    tl.store(y_ptr + N, m)


@triton.jit
def _running_max(x_ptr, y_ptr, N: tl.constexpr, STEPS: tl.constexpr):
    cols = tl.arange(0, N)
    m = tl.full([N], float("-inf"), tl.float32)
    for i in range(STEPS):
        m = tl.maximum(m, tl.load(x_ptr + i * N + cols))
    tl.store(y_ptr + cols, m)  # the loop's result is stored: its sign shows


@triton.jit
def _online_softmax_sum(x_ptr, y_ptr, N: tl.constexpr, STEPS: tl.constexpr):
    """An online softmax denominator: the running maximum is loop-carried and only reaches
    exp through subtractions, so its zero sign never shows."""
    cols = tl.arange(0, N)
    m = tl.full([N], float("-inf"), tl.float32)
    s = tl.zeros([N], tl.float32)
    for i in range(STEPS):
        x = tl.load(x_ptr + i * N + cols)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    tl.store(y_ptr + cols, s)


def _special_rows(n: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    rows = [
        np.zeros(n), -np.zeros(n), np.where(np.arange(n) % 3 == 0, 0.0, -0.0),
        np.where(np.arange(n) % 2 == 0, -0.0, -rng.random(n)),
        np.where(np.arange(n) % 5 == 0, 0.0, -np.abs(rng.standard_normal(n))),
        np.where(np.arange(n) == n - 1, np.nan, -0.0), np.full(n, np.nan),
        np.full(n, -np.inf), np.where(np.arange(n) % 4 == 0, np.inf, 0.0),
        np.where(np.arange(n) % 4 == 1, -np.inf, -0.0), rng.standard_normal(n) * 30,
    ]
    return np.stack(rows).astype(np.float32)


def _build(fn: Any, args: tuple, exact: bool, **kw: Any) -> Any:
    """The program with the analysis (exact=False) or with every max/min kept exact."""
    if not exact:
        return compile_kernel(fn, args, **kw)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ops_arith_float, "zero_sign_unseen", lambda *_: False)
        return compile_kernel(fn, args, **kw)


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint16 if a.dtype == np.float16 else np.uint32)


def _same_bits_both_ways(fn: Any, grid: tuple[int, ...], make: Any, out: int | tuple[int, ...],
                         **kw: Any) -> tuple[str, str]:
    """Build `fn` exact and with the analysis, run both on `make()`'s arguments, and check
    that the arguments at `out` (the outputs) come back with the same bits."""
    outs = (out,) if isinstance(out, int) else out
    sources, results = [], []
    for exact in (True, False):
        args = make()
        program = _build(fn, args, exact, **kw)
        dispatch(program, grid, args)
        sources.append(program.source)
        results.append([args[i] for i in outs])
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(_bits(a), _bits(b))
    return _body(sources[0]), _body(sources[1])


def _body(source: str) -> str:
    """The kernel function (the helpers' definitions above it name both forms)."""
    return source[source.index("kernel void"):]


def test_softmax_row_max_uses_fmax_with_the_same_bits() -> None:
    x = _special_rows(100)
    rows, n = x.shape

    def make() -> tuple:
        return (np.zeros_like(x), x.copy(), n, n, rows, n)

    exact, fast = _same_bits_both_ways(row_softmax_kernel, (3,), make, 0, num_warps=2,
                                       BLOCK=128, STAGES=1)
    assert "msl_maxnum" in exact and "precise::fmax" not in exact
    assert "precise::fmax" in fast and "msl_maxnum" not in fast


def test_min_reduce_into_exp2_uses_fmin() -> None:
    for row in _special_rows(64):
        exact, fast = _same_bits_both_ways(
            _exp_minus_min, (1,), lambda r=row: (-r.copy(), np.zeros_like(r)), 1, N=64)
        assert "precise::fmin" in fast and "msl_minnum" not in fast
        assert "msl_minnum" in exact


def test_pairwise_max_through_mul_and_compare_uses_fmax() -> None:
    x = _special_rows(64)
    for a, b in zip(x, np.roll(x, 3, axis=0), strict=True):
        exact, fast = _same_bits_both_ways(
            _exp_minus_pairwise_max, (1,),
            lambda a=a, b=b: (a.copy(), b.copy(), np.zeros_like(a)), 2, N=64)
        assert "precise::fmax" in fast and "msl_maxnum" not in fast


def test_tutorial_forward_keeps_the_exact_helper() -> None:
    """Tutorial 06's forward stores `m_i + log2(l_i)` and hands `m_i` from one loop to the
    next: both count as visible (analysis/zero_sign.py says why that stays so)."""
    q = np.zeros((1, 2, 64, 32), np.float16)
    args = (0.3, np.zeros((1, 2, 64), np.float32), 1, 2, q, q, q, np.zeros_like(q), 64)
    body = _body(compile_kernel(flash_attn_fwd, args, 2, HEAD_DIM=32, BLOCK_M=32, BLOCK_N=16,
                                FP8=False, CAUSAL=True).source)
    assert "msl_maxnum" in body and "precise::fmax" not in body


@pytest.mark.parametrize(("fn", "extra"), [(_log_softmax, 0), (_row_max, 1)])
def test_a_visible_sign_keeps_the_exact_helper(fn: Any, extra: int) -> None:
    x = np.zeros(64, np.float32)
    body = _body(compile_kernel(fn, (x, np.zeros(64 + extra, np.float32)), N=64).source)
    assert "msl_maxnum" in body and "precise::fmax" not in body


def test_a_stored_loop_carried_max_keeps_the_exact_helper() -> None:
    x = np.zeros(4 * 32, np.float32)
    body = _body(compile_kernel(_running_max, (x, np.zeros(32, np.float32)), N=32,
                                STEPS=4).source)
    assert "msl_maxnum" in body and "precise::fmax" not in body


def test_a_running_max_that_only_reaches_exp_uses_fmax() -> None:
    x = _special_rows(32)  # 11 steps of 32 columns: every column meets each special row
    exact, fast = _same_bits_both_ways(
        _online_softmax_sum, (1,), lambda: (x.copy().reshape(-1), np.zeros(32, np.float32)),
        1, N=32, STEPS=x.shape[0])
    assert "precise::fmax" in fast and "msl_maxnum" not in fast
    assert "msl_maxnum" in exact


@pytest.mark.parametrize("causal", [False, True])
def test_attention_running_max_uses_fmax_with_the_same_bits(causal: bool) -> None:
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 40, 32)).astype(np.float16) for _ in range(3))
    q[0, :8] = 0.0  # rows whose scores are all zero: their maximum is a zero
    k[1, :5] = -0.0

    def make() -> tuple:
        return (q, k, v, np.zeros_like(q), 40, 0.25)

    exact, fast = _same_bits_both_ways(attn_fwd, (2, 2), make, 3, num_warps=2, HEAD=32,
                                       BM=32, BN=16, CAUSAL=causal)
    assert "msl_maxnum" in exact
    assert "precise::fmax" in fast and "msl_maxnum" not in fast


def test_the_analysis_needs_every_path_to_end_where_the_sign_cannot_show() -> None:
    from types import SimpleNamespace

    from msltrans.ir.model import Location, Op, Value
    from msltrans.ir.types import ScalarType

    f32 = ScalarType("f32")

    def op(name: str, *operands: Value, results: tuple[Value, ...] = ()) -> Op:
        return Op(name, operands, results, {}, (), Location(None, None, None))

    def unseen(users: dict, owners: dict | None = None) -> bool:
        graph = SimpleNamespace(users=users, owners=owners or {})
        return zero_sign.zero_sign_unseen(m, graph)

    m, d, e = (Value(i, f32) for i in (1, 2, 3))
    users = {1: [(op("arith.subf", results=(d,)), 0)], 2: [(op("math.exp", results=(e,)), 0)]}
    assert unseen(users)
    users[2].append((op("arith.divf", results=(Value(5, f32),)), 0))  # 1/(x-m) sees it
    assert not unseen(users)
    assert unseen({})  # a value nothing reads
    # a yield whose owner is unknown shows the value
    assert not unseen({1: [(op("scf.yield"), 0)]})
    # out of a reduction whose combine is one max into its result (used by exp)
    from msltrans.ir.model import Block, Region

    ret, r = op("tt.reduce.return", m), Value(7, f32)
    for body, want in (((op("arith.maxnumf", results=(m,)), ret), True),
                       ((op("arith.maxnumf", results=(m,)), op("arith.divf"), ret), False)):
        reduce_op = Op("tt.reduce", (), (r,), {}, (Region((Block((), body),)),),
                       Location(None, None, None))
        graph = {1: [(ret, 0)], 7: [(op("math.exp", results=(e,)), 0)]}
        assert unseen(graph, {id(ret): reduce_op}) is want


def test_the_simulator_shows_a_max_whose_sign_is_seen() -> None:
    """Forcing fmax where the row maximum is stored changes output bits on the simulator (its
    fmax returns -0 for opposite zeros): the bit comparisons above can fail."""
    rows = [np.where(np.arange(64) == k, 0.0, -0.0).astype(np.float32) for k in (0, 31, 63)]
    outs = []
    for force in (False, True):
        with pytest.MonkeyPatch.context() as mp:
            if force:
                mp.setattr(ops_arith_float, "zero_sign_unseen", lambda *_: True)
            program = compile_kernel(_row_max, (rows[0], np.zeros(65, np.float32)), N=64)
        got = []
        for row in rows:
            args = (row.copy(), np.zeros(65, np.float32))
            dispatch(program, (1,), args)
            got.append(args[1][64])
        outs.append(np.array(got, np.float32))
    assert not np.signbit(outs[0]).any()  # maxNum with -0 below +0: +0
    assert np.signbit(outs[1]).all()
