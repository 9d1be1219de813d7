"""tt.scan: cumsum/cumprod forward and reverse, 1-D and 2-D on both axes, 64-bit types,
user combines (tl.associative_scan, incl. a non-commutative one), tiles past 1024."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from msltrans.toolchain import to_ttgir
from tests.support.combine import max_nan, mul
from tests.support.reduce_ref import assert_float_same, assert_sum_close, int_scan
from tests.support.run_kernel import compile_ttgir, dispatch, run_kernel
from tests.support.values import mixed_values

SLOW = pytest.mark.slow


@triton.jit
def scan_2d(x_ptr, s_ptr, sr_ptr, p_ptr, pr_ptr, M: tl.constexpr, N: tl.constexpr,
            AXIS: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(s_ptr + offs, tl.cumsum(x, axis=AXIS))
    tl.store(sr_ptr + offs, tl.cumsum(x, axis=AXIS, reverse=True))
    tl.store(p_ptr + offs, tl.associative_scan(x, AXIS, mul))
    tl.store(pr_ptr + offs, tl.associative_scan(x, AXIS, mul, reverse=True))


def _run_2d(dtype: str, axis: int, M: int, N: int, num_warps: int) -> None:
    x = mixed_values(dtype, M * N, seed=M + N).reshape(M, N)
    outs = [np.zeros_like(x) for _ in range(4)]
    run_kernel(scan_2d, (1,), x, *outs, num_warps=num_warps, M=M, N=N, AXIS=axis)
    if x.dtype.kind == "f":
        assert_sum_close(outs[0], x, axis, scan=True)
        assert_sum_close(outs[1], x, axis, scan=True, reverse=True)
        return
    refs = [int_scan(x, op, axis, rev) for op in ("sum", "prod") for rev in (False, True)]
    for got, ref, what in zip(outs, refs, ("cumsum", "rev cumsum", "cumprod", "rev cumprod"),
                              strict=True):
        np.testing.assert_array_equal(got, ref, err_msg=what)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint64", pytest.param("uint32", marks=SLOW),
                                   pytest.param("int8", marks=SLOW)])
def test_int_scan_2d(dtype: str, axis: int) -> None:
    _run_2d(dtype, axis, 16, 64, 4)


@pytest.mark.parametrize("axis", [0, 1])
def test_float_cumsum_2d(axis: int) -> None:
    M, N = 32, 16
    x = (np.random.default_rng(9).standard_normal((M, N)) * 4).astype(np.float32)
    outs = [np.zeros_like(x) for _ in range(4)]
    run_kernel(scan_2d, (1,), x, *outs, num_warps=4, M=M, N=N, AXIS=axis)
    assert_sum_close(outs[0], x, axis, scan=True)
    assert_sum_close(outs[1], x, axis, scan=True, reverse=True)


@pytest.mark.parametrize(("M", "N", "num_warps", "axis"), [
    (1, 8, 1, 1), (4, 256, 2, 1), (64, 8, 8, 0), (8, 128, 16, 0), (2, 512, 16, 1),
    pytest.param(128, 4, 16, 0, marks=SLOW), pytest.param(32, 32, 1, 1, marks=SLOW)])
def test_scan_shapes_num_warps(M: int, N: int, num_warps: int, axis: int) -> None:
    _run_2d("int32", axis, M, N, num_warps)


@triton.jit
def scan_1d(x_ptr, s_ptr, sr_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(s_ptr + offs, tl.cumsum(x, axis=0), mask=offs < n)
    tl.store(sr_ptr + offs, tl.cumsum(x, axis=0, reverse=True), mask=offs < n)


def _check_1d(n: int, num_warps: int) -> None:
    block = triton.next_power_of_2(n)
    x = mixed_values("uint64", n, seed=n)  # past 2**63: wraps mod 2**64
    s, sr = np.zeros_like(x), np.zeros_like(x)
    run_kernel(scan_1d, (1,), x, s, sr, n, num_warps=num_warps, BLOCK=block)
    xp = np.concatenate([x, np.zeros(block - n, np.uint64)])
    np.testing.assert_array_equal(s, int_scan(x, "sum", 0, False))
    np.testing.assert_array_equal(sr, int_scan(xp, "sum", 0, True)[:n])


@pytest.mark.parametrize(("n", "num_warps"), [(1, 1), (33, 4), (1000, 8), (4096, 16),
                                              (8192, 4)])
def test_scan_1d_lengths(n: int, num_warps: int) -> None:
    _check_1d(n, num_warps)


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 3, 31, 32, 64, 100, 255, 256, 513, 1024, 1025, 2048, 3333,
                               4096, 8191, 8192])
@pytest.mark.parametrize("num_warps", [1, 4, 16])
def test_scan_1d_sweep(n: int, num_warps: int) -> None:
    _check_1d(n, num_warps)


@triton.jit
def _affine(a1, b1, a2, b2):
    # x -> a*x + b composed left to right: not commutative, so the order is checked.
    return a1 * a2, b1 * a2 + b2


@triton.jit
def user_scan(a_ptr, b_ptr, f_ptr, oa_ptr, ob_ptr, of_ptr, M: tl.constexpr, N: tl.constexpr,
              AXIS: tl.constexpr, REV: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    ra, rb = tl.associative_scan((a, b), AXIS, _affine, reverse=REV)
    tl.store(oa_ptr + offs, ra)
    tl.store(ob_ptr + offs, rb)
    tl.store(of_ptr + offs, tl.associative_scan(tl.load(f_ptr + offs), AXIS, max_nan,
                                                reverse=REV))


@pytest.mark.parametrize(("axis", "rev", "num_warps"), [(1, False, 4), (0, True, 8)])
def test_user_combine_scan(axis: int, rev: bool, num_warps: int) -> None:
    M, N = 16, 64
    rng = np.random.default_rng(10)
    a = rng.integers(-3, 4, (M, N)).astype(np.int32)
    b = rng.integers(-2**31, 2**31, (M, N), dtype=np.int64).astype(np.int32)
    f = mixed_values("float32", M * N, seed=11).reshape(M, N)
    f[f == 0] = 0.0  # numpy has no -0.0 < +0.0 maximum; that rule is tested in test_reduce
    oa, ob, of = np.zeros_like(a), np.zeros_like(b), np.zeros_like(f)
    run_kernel(user_scan, (1,), a, b, f, oa, ob, of, num_warps=num_warps, M=M, N=N, AXIS=axis,
               REV=rev)
    # Sequential reference in scan order, wrapping in 32 bits.
    A, B = a.astype(np.int64), b.astype(np.int64)
    ra, rb, rf = np.zeros_like(A), np.zeros_like(B), np.zeros_like(f)
    n = a.shape[axis]
    order = range(n - 1, -1, -1) if rev else range(n)
    ca = cb = cf = None
    for i in order:
        idx = (slice(None), i) if axis == 1 else (i, slice(None))
        if ca is None:
            ca, cb, cf = A[idx], B[idx], f[idx]
        else:
            ca, cb = (ca * A[idx]) & 0xFFFFFFFF, (cb * A[idx] + B[idx]) & 0xFFFFFFFF
            with np.errstate(invalid="ignore"):
                cf = np.where(np.isnan(cf) | np.isnan(f[idx]), np.nan, np.maximum(cf, f[idx]))
        ra[idx], rb[idx], rf[idx] = ca, cb, cf
    np.testing.assert_array_equal(oa, ra.astype(np.uint32).astype(np.int32))
    np.testing.assert_array_equal(ob, rb.astype(np.uint32).astype(np.int32))
    assert_float_same(of, rf.astype(np.float32))


@triton.jit
def wide_kernel(x_ptr, s_ptr, r_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(s_ptr + offs, tl.cumsum(x, axis=0))
    tl.store(r_ptr + tl.arange(0, N), tl.sum(x, axis=0))


def test_scratch_batches_int64() -> None:
    # 16 simdgroups along the axis × 64-bit values: the scratch pass runs in several batches.
    M, N = 256, 64
    x = mixed_values("int64", M * N, seed=15).reshape(M, N)
    s, r = np.zeros_like(x), np.zeros(N, np.int64)
    program = run_kernel(wide_kernel, (1,), x, s, r, num_warps=16, M=M, N=N)
    assert program.source.count("threadgroup_barrier") > 6
    np.testing.assert_array_equal(s, int_scan(x, "sum", 0, False))
    np.testing.assert_array_equal(r, int_scan(x, "sum", 0, False)[-1])


@triton.jit
def scan64_kernel(x_ptr, s_ptr, r_ptr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    tl.store(s_ptr + offs, tl.cumsum(x, axis=0))
    tl.store(r_ptr + offs, tl.cumsum(x, axis=0, reverse=True))


def _scan64_with(tmp_path: Path, linear: str) -> Path:
    """scan64_kernel's TTGIR with its one #blocked layout replaced by `linear`."""
    text = str(to_ttgir(scan64_kernel, {"x_ptr": "*i32", "s_ptr": "*i32", "r_ptr": "*i32"},
                        {}, 1))
    text, n = re.subn(r"^#blocked = .*$", f"#blocked = {linear}", text, flags=re.M)
    assert n == 1 and "#blocked1" not in text
    path = tmp_path / "scan64.ttgir"
    path.write_text(text)
    return path


def test_scan_permuted_lanes(tmp_path: Path) -> None:
    # Axis lanes out of lane-id order (lane bit 1 holds axis bit 0): the Hillis-Steele
    # shuffles must read the lane that holds position l - d, not lane - d.
    path = _scan64_with(tmp_path, "#ttg.linear<{register = [[32]], lane = [[2], [1], [4], [8], "
                        "[16]], warp = [], block = []}>")
    x = mixed_values("int32", 64, seed=3)
    s, r = np.zeros_like(x), np.zeros_like(x)
    dispatch(compile_ttgir(path), (1,), (x, s, r))
    np.testing.assert_array_equal(s, int_scan(x, "sum", 0, False))
    np.testing.assert_array_equal(r, int_scan(x, "sum", 0, True))


def test_scan_refuses_registers_between_lanes(tmp_path: Path) -> None:
    # Axis bit 1 in a register between lane bits: not Triton's (lanes, warps, repeats) split.
    path = _scan64_with(tmp_path, "#ttg.linear<{register = [[2]], lane = [[1], [4], [8], [16], "
                        "[32]], warp = [], block = []}>")
    with pytest.raises(MetalNonRecoverableError, match="lanes, then simdgroups") as err:
        compile_ttgir(path)
    assert "convert_layout" in str(err.value)
