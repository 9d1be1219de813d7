"""Triton shape and math ops through unmodified @triton.jit kernels, against numpy."""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from tests.e2e.test_cat import cat_kernel
from tests.support.diff import apple_nan
from tests.support.run_kernel import run_kernel


@triton.jit
def trans_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(out_ptr + rn[:, None] * M + rm[None, :], tl.trans(x))


@triton.jit
def reshape_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M * N)
    x = tl.load(x_ptr + r)
    y = tl.reshape(x, (M, N))
    tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], y * 2.0)


@triton.jit
def join_split_kernel(a_ptr, b_ptr, out_ptr, swapped_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r)
    b = tl.load(b_ptr + r)
    z = tl.join(a, b)  # [N, 2]
    tl.store(out_ptr + r[:, None] * 2 + tl.arange(0, 2)[None, :], z)
    lo, hi = tl.split(z)
    tl.store(swapped_ptr + r, hi - lo)



@triton.jit
def math_kernel(x_ptr, y_ptr, u_ptr, sqrt_ptr, div_ptr, clamp_ptr, clamp_nan_ptr, bits_ptr,
                half_ptr, hi_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    u = tl.load(u_ptr + offs, mask=m)
    tl.store(sqrt_ptr + offs, tl.sqrt_rn(x), mask=m)
    tl.store(div_ptr + offs, tl.div_rn(x, y), mask=m)
    tl.store(clamp_ptr + offs, tl.clamp(x, -1.0, 2.0), mask=m)
    tl.store(clamp_nan_ptr + offs, tl.clamp(x, -1.0, 2.0, propagate_nan=tl.PropagateNan.ALL),
             mask=m)
    tl.store(bits_ptr + offs, x.to(tl.int32, bitcast=True), mask=m)
    tl.store(half_ptr + offs, x.to(tl.float16, fp_downcast_rounding="rtne"), mask=m)
    tl.store(hi_ptr + offs, tl.umulhi(u, u + 12345), mask=m)


@pytest.mark.parametrize(("m", "n", "num_warps"), [(16, 32, 4), (8, 8, 1), (64, 16, 8),
                                                     (32, 64, 16)])
def test_trans(m: int, n: int, num_warps: int) -> None:
    x = np.arange(m * n, dtype=np.float32).reshape(m, n)
    out = np.full((n, m), np.nan, np.float32)
    run_kernel(trans_kernel, (1,), x, out, num_warps=num_warps, M=m, N=n)
    np.testing.assert_array_equal(out, x.T)


@pytest.mark.parametrize(("m", "n", "num_warps"), [(16, 32, 4), (4, 64, 2), (32, 8, 16)])
def test_reshape(m: int, n: int, num_warps: int) -> None:
    x = np.arange(m * n, dtype=np.float32)
    out = np.full((m, n), np.nan, np.float32)
    run_kernel(reshape_kernel, (1,), x, out, num_warps=num_warps, M=m, N=n)
    np.testing.assert_array_equal(out, (x * 2).reshape(m, n))


@pytest.mark.parametrize(("n", "num_warps"), [(128, 4), (32, 1), (256, 8), (16, 2)])
def test_join_split(n: int, num_warps: int) -> None:
    a = np.arange(n, dtype=np.float32)
    b = np.arange(n, dtype=np.float32) * 10 + 1
    out = np.full((n, 2), np.nan, np.float32)
    swapped = np.full(n, np.nan, np.float32)
    run_kernel(join_split_kernel, (1,), a, b, out, swapped, num_warps=num_warps, N=n)
    np.testing.assert_array_equal(out, np.stack([a, b], axis=1))
    np.testing.assert_array_equal(swapped, b - a)


@pytest.mark.parametrize(("n", "num_warps"), [(128, 4), (64, 1)])
def test_cat_keeps_every_element(n: int, num_warps: int) -> None:
    # can_reorder=True: only the multiset of elements is specified.
    a = np.arange(n, dtype=np.float32)
    b = np.arange(n, dtype=np.float32) + 1000
    out = np.full(2 * n, np.nan, np.float32)
    run_kernel(cat_kernel, (1,), a, b, out, num_warps=num_warps, N=n)
    np.testing.assert_array_equal(np.sort(out), np.sort(np.concatenate([a, b])))


def test_math_ops() -> None:
    n = 1000
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    x[:6] = [0.0, -0.0, np.inf, np.nan, 4.0, 65520.0]
    y = (rng.standard_normal(n) + 0.5).astype(np.float32)
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    outs = {k: np.zeros(n, dt) for k, dt in [
        ("sqrt", np.float32), ("div", np.float32), ("clamp", np.float32),
        ("clamp_nan", np.float32), ("bits", np.int32), ("half", np.float16),
        ("hi", np.uint32)]}
    run_kernel(math_kernel, ((n + 255) // 256,), x, y, u, *outs.values(), n, BLOCK=256)
    with np.errstate(all="ignore"):
        # NaNs from arithmetic are Apple's canonical one (sqrt of a negative, NaN operands)
        assert outs["sqrt"].tobytes() == apple_nan(np.sqrt(x)).tobytes()
        assert outs["div"].tobytes() == apple_nan(x / y).tobytes()
        # propagate_nan=NONE: a NaN input gives the lower bound (maxnum, then minnum).
        want = np.fmin(np.fmax(x, np.float32(-1)), np.float32(2))
        np.testing.assert_array_equal(outs["clamp"], want)
        np.testing.assert_array_equal(outs["clamp_nan"], np.clip(x, -1, 2))
        assert outs["half"].tobytes() == x.astype(np.float16).tobytes()
    assert outs["bits"].tobytes() == x.view(np.int32).tobytes()
    u64 = u.astype(np.uint64)
    want_hi = ((u64 * ((u64 + 12345) & 0xFFFFFFFF)) >> 32).astype(np.uint32)
    np.testing.assert_array_equal(outs["hi"], want_hi)


@triton.jit
def split_kernel(x_ptr, lo_ptr, hi_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r[:, None] * 2 + tl.arange(0, 2)[None, :])  # [N, 2]
    lo, hi = tl.split(x)
    tl.store(lo_ptr + r, lo)
    tl.store(hi_ptr + r, hi)


@pytest.mark.parametrize(("n", "num_warps"), [(128, 4), (16, 1), (512, 16)])
def test_split(n: int, num_warps: int) -> None:
    x = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
    lo, hi = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
    program = run_kernel(split_kernel, (1,), x, lo, hi, num_warps=num_warps, N=n)
    assert "// tt.split" in program.source
    np.testing.assert_array_equal(lo, x[:, 0])
    np.testing.assert_array_equal(hi, x[:, 1])
