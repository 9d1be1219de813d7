"""Upstream-style control flow (test_core's test_if, test_if_else, test_if_return,
test_nested_if_else_return, test_constexpr_if_return, test_side_effectful_if, test_while,
test_for_iv, test_static_range, test_tl_range, test_call / noinline, test_short_circuiting,
test_early_return), written for this project. References are plain Python loops.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from tests.conformance.upstream_style_support import require_metal_sim
from tests.support.run_kernel import run_kernel


@pytest.fixture(scope="module", autouse=True)
def _metal_sim() -> None:
    require_metal_sim()


@triton.jit
def _if_else(X, Z, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    if flag > 0:
        y = x + 1
    elif flag == 0:
        y = x * 2
    else:
        y = -x
    tl.store(Z + offs, y)


@pytest.mark.parametrize("flag", [5, 0, -3])
def test_if_elif_else_on_runtime_scalar(flag: int) -> None:
    x = torch.arange(-16, 16, dtype=torch.int32)
    z = torch.empty_like(x)
    _if_else[(1,)](x, z, flag, BLOCK=32)
    assert torch.equal(z, x + 1 if flag > 0 else (x * 2 if flag == 0 else -x))


@triton.jit
def _nested_return(Z, a, b):
    if a > 0:
        if b > 0:
            tl.store(Z, 11)
            return
        tl.store(Z, 12)
        return
    elif b > 0:
        tl.store(Z, 21)
        return
    tl.store(Z, 22)


@pytest.mark.parametrize("a, b", [(1, 1), (1, -1), (-1, 1), (-1, -1)])
def test_nested_if_else_return(a: int, b: int) -> None:
    z = torch.zeros(1, dtype=torch.int32)
    _nested_return[(1,)](z, a, b)
    assert z.item() == {(1, 1): 11, (1, -1): 12, (-1, 1): 21, (-1, -1): 22}[(a, b)]


@triton.jit
def _constexpr_if_return(Z, MODE: tl.constexpr):
    if MODE == 0:
        tl.store(Z, 100)
        return
    tl.store(Z, 200)


@pytest.mark.parametrize("mode", [0, 1])
def test_constexpr_if_return(mode: int) -> None:
    z = torch.zeros(1, dtype=torch.int32)
    _constexpr_if_return[(1,)](z, MODE=mode)
    assert z.item() == (100 if mode == 0 else 200)


@triton.jit
def _early_return(Z, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(Z + offs, offs, mask=offs < n)


def test_early_return_per_program() -> None:
    z = torch.full((200,), -1, dtype=torch.int32)
    _early_return[(10,)](z, 100, BLOCK=32)  # programs 4..9 return before storing
    assert torch.equal(z[:100], torch.arange(100, dtype=torch.int32))
    assert torch.all(z[100:] == -1)


@triton.jit
def _side_effect_if(X, Z, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    s = tl.sum(tl.load(X + offs), axis=0)
    if s > 0:
        tl.store(Z + offs, offs)
    else:
        tl.store(Z + offs, -offs)


@pytest.mark.parametrize("sign", [1, -1])
def test_side_effectful_if(sign: int) -> None:
    x = np.full(16, sign, np.int32)
    z = np.zeros(16, np.int32)
    run_kernel(_side_effect_if, (1,), x, z, BLOCK=16)
    np.testing.assert_array_equal(z, np.arange(16) * sign)


@triton.jit
def _for_iv(Z, lo, hi, STEP: tl.constexpr, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.int64)
    count = 0
    for i in range(lo, hi, STEP):  # a negative step must be constexpr (frontend rule)
        acc += i
        count += 1
    tl.store(Z + tl.arange(0, BLOCK), acc)
    tl.store(Z + BLOCK, count)


@pytest.mark.parametrize("lo, hi, step", [(0, 10, 1), (-7, 20, 3), (5, 5, 1), (10, 0, -2),
                                          (2**31 - 10, 2**31 + 5, 4), (-(2**33), -(2**33) + 9,
                                                                       2)])
def test_for_iv(lo: int, hi: int, step: int) -> None:
    z = np.zeros(17, np.int64)
    run_kernel(_for_iv, (1,), z, lo, hi, STEP=step, BLOCK=16)
    ref = list(range(lo, hi, step))
    assert z[16] == len(ref)
    np.testing.assert_array_equal(z[:16], np.full(16, sum(ref), np.int64))


@triton.jit
def _while(Z, start, limit, BLOCK: tl.constexpr):
    i = start
    steps = 0
    while i < limit:  # Collatz-like: data-dependent trip count
        if i % 2 == 0:
            i = i + 3
        else:
            i = i * 2
        steps += 1
    tl.store(Z, i)
    tl.store(Z + 1, steps)


@pytest.mark.parametrize("start, limit", [(1, 100), (7, 8), (50, 10), (-4, 40)])
def test_while(start: int, limit: int) -> None:
    z = torch.zeros(2, dtype=torch.int32)
    _while[(1,)](z, start, limit, BLOCK=1)
    i, steps = start, 0
    while i < limit:
        i = i + 3 if i % 2 == 0 else i * 2
        steps += 1
    assert (z[0].item(), z[1].item()) == (i, steps)


@triton.jit
def _static_and_tl_range(X, Z, n_iter, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    acc = tl.zeros((BLOCK,), tl.float32)
    for k in tl.static_range(UNROLL):
        acc += x * (k + 1)
    for k in tl.range(0, n_iter, num_stages=2):
        acc = acc * 0.5 + k
    tl.store(Z + offs, acc)


@pytest.mark.parametrize("unroll, n_iter", [(1, 0), (3, 4), (4, 1)])
def test_static_range_and_tl_range(unroll: int, n_iter: int) -> None:
    x = torch.linspace(-2, 2, 64)
    z = torch.empty(64)
    _static_and_tl_range[(1,)](x, z, n_iter, BLOCK=64, UNROLL=unroll)
    acc = torch.zeros(64)
    for k in range(unroll):
        acc = acc + x * (k + 1)  # exact: small multiples of dyadic values
    for k in range(n_iter):
        acc = acc * 0.5 + k
    torch.testing.assert_close(z, acc, rtol=0, atol=0)


@triton.jit(noinline=True)
def _noinline_axpy(x, y, a):
    return a * x + y


@triton.jit
def _inline_sq(x):
    return x * x


@triton.jit
def _calls(X, Y, Z, a, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    s = _noinline_axpy(tl.load(X + 3), tl.load(Y + 5), a)  # noinline helpers take scalars
    tl.store(Z + offs, _inline_sq(a * x + y) + s)


@pytest.mark.parametrize("a", [3, -2])
def test_call_noinline_and_inline(a: int) -> None:
    x = np.arange(-8, 8, dtype=np.int32)
    y = np.arange(16, dtype=np.int32) * 5
    z = np.zeros(16, np.int32)
    run_kernel(_calls, (1,), x, y, z, a, BLOCK=16)
    np.testing.assert_array_equal(z, (a * x + y) ** 2 + a * x[3] + y[5])


@triton.jit
def _loop_carried(X, Z, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    lo = tl.full((BLOCK,), float("inf"), tl.float32)
    hi = tl.full((BLOCK,), float("-inf"), tl.float32)
    total = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n, BLOCK):
        m = start + offs < n
        v = tl.load(X + start + offs, mask=m, other=0.0)
        lo = tl.where(m, tl.minimum(lo, v), lo)
        hi = tl.where(m, tl.maximum(hi, v), hi)
        total += v
    tl.store(Z, tl.min(lo, axis=0))
    tl.store(Z + 1, tl.max(hi, axis=0))
    tl.store(Z + 2, tl.sum(total, axis=0))


@pytest.mark.parametrize("n", [1, 100, 256])
def test_loop_carried_reduction(n: int) -> None:
    x = (np.random.default_rng(n).integers(-64, 64, n) / 4).astype(np.float32)
    z = np.zeros(3, np.float32)
    run_kernel(_loop_carried, (1,), x, z, n, BLOCK=64)
    np.testing.assert_array_equal(z, [x.min(), x.max(), x.sum()])  # dyadic: sums are exact
