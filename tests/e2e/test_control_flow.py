"""scf.for / scf.while / scf.if, early returns and noinline helper calls, bit-exact vs numpy.

References follow the IR: fp32 sums in the loop's order (each lane accumulates its own
column, so numpy's sequential float32 adds give the same bits), i32 wrap-around.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from tests.support.run_kernel import compile_ttgir, run_kernel
from tests.support.triton_features import NOINLINE_TENSOR_REASON, noinline_returns_tensors


@triton.jit
def k_loop_kernel(x_ptr, out_ptr, sum_ptr, n, k_lo, k_hi, stride, BLOCK: tl.constexpr):
    # out[c] = sum over k in range(k_lo, k_hi, 3) of x[k, c]; carried tensor + scalar.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    s = 0
    for k in range(k_lo, k_hi, 3):
        acc += tl.load(x_ptr + k * stride + offs, mask=m, other=0.0)
        s += k
    tl.store(out_ptr + offs, acc, mask=m)
    tl.store(sum_ptr + tl.program_id(0), s)


def _ref_k_loop(x: np.ndarray, k_lo: int, k_hi: int) -> tuple[np.ndarray, int]:
    acc = np.zeros(x.shape[1], np.float32)
    s = 0
    for k in range(k_lo, k_hi, 3):
        acc = acc + x[k]
        s += k
    return acc, s


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize(("k_lo", "k_hi"), [(0, 10), (2, 3), (5, 5), (7, 2)])
def test_for_carried_tensor_and_scalar(num_warps: int, k_lo: int, k_hi: int) -> None:
    n, rows, block = 300, 10, 128
    rng = np.random.default_rng(k_lo * 31 + k_hi)
    x = rng.standard_normal((rows, n)).astype(np.float32)
    grid = (n + block - 1) // block
    out = np.full(n, np.nan, np.float32)
    sums = np.full(grid, -1, np.int32)
    run_kernel(k_loop_kernel, (grid,), x, out, sums, n, k_lo, k_hi, n, num_warps=num_warps,
               BLOCK=block)
    want, s = _ref_k_loop(x, k_lo, k_hi)
    assert out.tobytes() == want.tobytes()
    assert (sums == s).all()


@triton.jit
def fib_nested_kernel(out_ptr, fib_ptr, n_outer, n_inner, BLOCK: tl.constexpr):
    # Nested loops; `a, b = b, a + b` makes the yield a permutation of the carried values.
    offs = tl.arange(0, BLOCK)
    a = offs
    b = offs * 0 + 1
    total = tl.zeros([BLOCK], dtype=tl.int32)
    for i in range(n_outer):
        for j in tl.range(0, n_inner):
            total += (i * n_inner + j) * offs
        a, b = b, a + b
    tl.store(out_ptr + offs, total)
    tl.store(fib_ptr + offs, a)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_nested_loops_and_swapped_yield(num_warps: int) -> None:
    block, n_outer, n_inner = 64, 6, 5
    out = np.zeros(block, np.int32)
    fib = np.zeros(block, np.int32)
    run_kernel(fib_nested_kernel, (1,), out, fib, n_outer, n_inner, num_warps=num_warps,
               BLOCK=block)
    offs = np.arange(block, dtype=np.int64)
    total = sum((i * n_inner + j) * offs for i in range(n_outer) for j in range(n_inner))
    a, b = offs.copy(), np.ones(block, np.int64)
    for _ in range(n_outer):
        a, b = b, a + b
    assert (out == total.astype(np.int32)).all()
    assert (fib == a.astype(np.int32)).all()


@triton.jit
def while_kernel(steps_ptr, x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Data-dependent exit (Collatz on the program id) and a while loop carrying a tensor
    # whose trip count comes from memory.
    pid = tl.program_id(0)
    k = pid + 1
    steps = 0
    while k != 1:
        if k % 2 == 0:
            k = k // 2
        else:
            k = 3 * k + 1
        steps += 1
    tl.store(steps_ptr + pid, steps)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    row = 0
    limit = tl.load(x_ptr + pid * BLOCK).to(tl.int32)  # x[pid, 0] holds the row count
    while row < limit:
        acc = acc * 0.5 + tl.load(x_ptr + (pid + row) * BLOCK + offs, mask=m, other=0.0)
        row += 1
    tl.store(out_ptr + pid * BLOCK + offs, acc, mask=m)


def _collatz(k: int) -> int:
    steps = 0
    while k != 1:
        k = k // 2 if k % 2 == 0 else 3 * k + 1
        steps += 1
    return steps


@pytest.mark.parametrize("num_warps", [1, 4])
def test_while_data_dependent(num_warps: int) -> None:
    programs, block, n = 9, 32, 29
    rng = np.random.default_rng(3)
    x = rng.standard_normal((programs + 8, block)).astype(np.float32)
    x[:programs, 0] = rng.integers(0, 8, programs)
    steps = np.full(programs, -1, np.int32)
    out = np.full((programs, block), np.nan, np.float32)
    run_kernel(while_kernel, (programs,), steps, x, out, n, num_warps=num_warps, BLOCK=block)
    assert steps.tolist() == [_collatz(p + 1) for p in range(programs)]
    for p in range(programs):
        acc = np.zeros(block, np.float32)
        for row in range(int(x[p, 0])):
            acc = acc * np.float32(0.5) + x[p + row]  # *0.5 is exact: fma or not, same bits
        np.testing.assert_array_equal(out[p, :n], acc[:n])
    assert np.isnan(out[:, n:]).all()


@triton.jit
def if_results_kernel(x_ptr, out_ptr, flag_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if pid % 3 == 0:
        y = x * 2.0
        f = pid + 100
    elif pid % 3 == 1:
        y = x - 1.0
        f = pid
    else:
        y = x
        f = -pid
    tl.store(out_ptr + offs, y, mask=m)
    tl.store(flag_ptr + pid, f)


@pytest.mark.parametrize("num_warps", [1, 8])
def test_if_with_results(num_warps: int) -> None:
    n, block = 1000, 128
    grid = (n + block - 1) // block
    x = np.random.default_rng(5).standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    flags = np.zeros(grid, np.int32)
    run_kernel(if_results_kernel, (grid,), x, out, flags, n, num_warps=num_warps, BLOCK=block)
    pid = np.arange(n) // block
    want = np.where(pid % 3 == 0, x * np.float32(2), np.where(pid % 3 == 1, x - np.float32(1), x))
    assert out.tobytes() == want.astype(np.float32).tobytes()
    p = np.arange(grid)
    assert flags.tolist() == np.where(p % 3 == 0, p + 100, np.where(p % 3 == 1, p, -p)).tolist()


@triton.jit
def early_return_kernel(out_ptr, n_valid, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid >= n_valid:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs + 1, mask=offs < n)
    if pid % 2 == 1:
        if pid > 2:
            return
        tl.store(out_ptr + offs, offs * 10, mask=offs < n)
    tl.store(out_ptr + offs, -offs, mask=(offs < n) & (offs % 4 == 0))


@pytest.mark.parametrize("num_warps", [1, 4])
def test_early_returns(num_warps: int) -> None:
    n, block, n_valid, grid = 500, 64, 6, 8
    out = np.full(n, 7, np.int32)
    run_kernel(early_return_kernel, (grid,), out, n_valid, n, num_warps=num_warps, BLOCK=block)
    want = np.full(n, 7, np.int64)
    for pid in range(grid):
        offs = np.arange(pid * block, min((pid + 1) * block, n))
        if pid >= n_valid or offs.size == 0:
            continue
        want[offs] = offs + 1
        if pid % 2 == 1:
            if pid > 2:
                continue
            want[offs] = offs * 10
        sel = offs[offs % 4 == 0]
        want[sel] = -sel
    assert out.tolist() == want.tolist()


@triton.jit(noinline=True)
def scaled_sum(a, b, scale):
    if a > b:
        return (a - b) * scale
    return (a + b) * scale


@triton.jit(noinline=True)
def outer_helper(a, b):
    return scaled_sum(a, b, 3) + scaled_sum(b, a, 5)


@triton.jit
def call_kernel(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    v = outer_helper(pid, n)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + pid * BLOCK + offs, x + v)


def test_noinline_helper_calls() -> None:
    n, block, grid = 4, 32, 9
    x = np.arange(block, dtype=np.int32)
    out = np.zeros((grid, block), np.int32)
    prog = run_kernel(call_kernel, (grid,), out, x, n, num_warps=1, BLOCK=block)
    # One MSL function per callee; Triton specialises scaled_sum on its constant `scale`.
    assert prog.source.count("@triton.jit(noinline=True) helper") == 3

    def ss(a: int, b: int, s: int) -> int:
        return (a - b) * s if a > b else (a + b) * s

    for pid in range(grid):
        v = ss(pid, n, 3) + ss(n, pid, 5)
        assert out[pid].tolist() == (x + v).tolist()


@triton.jit
def barrier_in_loop_kernel(x_ptr, out_ptr, n_rows, n, BLOCK: tl.constexpr):
    # Reductions (scratch + barriers) inside a loop and under a branch on their own scalar
    # result: legal because the scalar is uniform, so every thread meets every barrier.
    offs = tl.arange(0, BLOCK)
    m = offs < n
    total = 0
    for row in range(n_rows):
        x = tl.load(x_ptr + row * n + offs, mask=m, other=0)
        s = tl.sum(x, axis=0)
        if s > 0:
            total += tl.max(x, axis=0)
        else:
            total -= tl.min(x, axis=0)
    tl.store(out_ptr, total)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_barriers_inside_loop_and_branch(num_warps: int) -> None:
    rows, n, block = 9, 300, 512
    x = np.random.default_rng(num_warps).integers(-50, 50, (rows, n)).astype(np.int32)
    out = np.zeros(1, np.int32)
    run_kernel(barrier_in_loop_kernel, (1,), x, out, rows, n, num_warps=num_warps, BLOCK=block)
    want = sum(int(r.max()) if r.sum() > 0 else -int(r.min()) for r in x)
    assert out[0] == want


@triton.jit(noinline=True)
def ramp(a, BLOCK: tl.constexpr):
    return tl.arange(0, BLOCK) * a, a + 1


@triton.jit
def tensor_call_i64_loop_kernel(out_ptr, sum_ptr, lo, hi, BLOCK: tl.constexpr):
    # A helper returning (tensor, scalar); an scf.for with i64 bounds past 2**32.
    r, b = ramp(hi.to(tl.int32), BLOCK)
    tl.store(out_ptr + tl.arange(0, BLOCK), r + b)
    s = 0
    for i in range(lo, hi):
        s += (i - lo).to(tl.int32) * 3
    tl.store(sum_ptr, s)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_tensor_returning_helper_and_i64_loop(num_warps: int) -> None:
    if not noinline_returns_tensors():
        pytest.skip(NOINLINE_TENSOR_REASON)
    block = 128
    lo, hi = 2**32 + 5, 2**32 + 47
    out = np.zeros(block, np.int32)
    sums = np.zeros(1, np.int32)
    run_kernel(tensor_call_i64_loop_kernel, (1,), out, sums, lo, hi, num_warps=num_warps,
               BLOCK=block)
    a = np.int64(hi).astype(np.int32)  # trunci: the low 32 bits
    assert out.tolist() == (np.arange(block, dtype=np.int32) * a + a + 1).tolist()
    assert sums[0] == sum((i - lo) * 3 for i in range(lo, hi))


_CF_LOOP = """
module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 1 : i32,
                   ttg.target = "metal:apple-m1", "ttg.threads-per-warp" = 32 : i32} {
  tt.func public @loop(%arg0: !tt.ptr<i32>, %arg1: i32) {
    %c1 = arith.constant 1 : i32
    cf.br ^bb1(%arg1 : i32)
  ^bb1(%0: i32):
    %1 = arith.subi %0, %c1 : i32
    %2 = arith.cmpi sgt, %1, %c1 : i32
    cf.cond_br %2, ^bb1(%1 : i32), ^bb2
  ^bb2:
    tt.store %arg0, %1 : !tt.ptr<i32>
    tt.return
  }
}
"""


def test_backward_branch_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.ttgir"
    path.write_text(_CF_LOOP)
    with pytest.raises(MetalNonRecoverableError, match="backward branch.*scf.for"):
        compile_ttgir(path)


_RECURSIVE = """
module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 1 : i32,
                   ttg.target = "metal:apple-m1", "ttg.threads-per-warp" = 32 : i32} {
  tt.func public @k(%arg0: !tt.ptr<i32>, %arg1: i32) {
    %0 = tt.call @f(%arg1) : (i32) -> i32
    tt.store %arg0, %0 : !tt.ptr<i32>
    tt.return
  }
  tt.func private @f(%arg0: i32) -> i32 attributes {noinline = true} {
    %0 = tt.call @f(%arg0) : (i32) -> i32
    tt.return %0 : i32
  }
}
"""


def test_recursive_call_refused(tmp_path: Path) -> None:
    path = tmp_path / "rec.ttgir"
    path.write_text(_RECURSIVE)
    with pytest.raises(MetalNonRecoverableError, match="recursive call.*no recursion"):
        compile_ttgir(path)
