"""A masked 1-D vector add and a 2-D broadcast add, byte-exact against numpy."""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from tests.support.kernels import broadcast_add_kernel, vadd_kernel
from tests.support.run_kernel import run_kernel


@pytest.mark.parametrize("n", [1, 97, 1000, 4099])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_vector_add_odd_sizes(n: int, num_warps: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    block = 256
    run_kernel(vadd_kernel, ((n + block - 1) // block,), x, y, out, n, num_warps=num_warps,
               BLOCK=block)
    assert out.tobytes() == (x + y).tobytes()


@pytest.mark.parametrize("shape", [(1, 1), (17, 33), (64, 40)])
@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_broadcast_add_2d(shape: tuple[int, int], num_warps: int) -> None:
    m, n = shape
    rng = np.random.default_rng(m * n)
    x = rng.standard_normal((m, n)).astype(np.float32)
    row = rng.standard_normal(n).astype(np.float32)
    out = np.full((m, n), np.nan, dtype=np.float32)
    bm, bn = 16, 32
    grid = ((m + bm - 1) // bm, (n + bn - 1) // bn)
    run_kernel(broadcast_add_kernel, grid, x, row, out, m, n, n, num_warps=num_warps,
               BLOCK_M=bm, BLOCK_N=bn)
    assert out.tobytes() == (x + row[None, :]).tobytes()


@triton.jit
def scalar_args_kernel(out_ptr, a, b, c, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.where(flag, a * 2 + c, b)  # i32, i64, fp32 and i1 scalars
    tl.store(out_ptr + offs, v + offs.to(tl.float32))


def test_scalar_argument_kinds() -> None:
    out = np.zeros(64, np.float32)
    program = run_kernel(scalar_args_kernel, (1,), out, 7, 2**40, 0.25, True, BLOCK=64)
    # one constant struct after the pointer: i64 first (8-byte aligned), then i32, fp32, i1
    assert [(p.msl_type, p.buffer_index, p.offset) for p in program.params[1:]] == [
        ("int", 1, 8), ("long", 1, 0), ("float", 1, 12), ("bool", 1, 16)]
    assert program.args_size == 24 and program.arg_casts == {1: "uint8"}
    np.testing.assert_array_equal(out, np.float32(7 * 2 + 0.25) + np.arange(64, dtype=np.float32))


@triton.jit
def bool_io_kernel(x_ptr, flags_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    flags = tl.load(flags_ptr + offs, mask=m, other=False)
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, (x > 0) ^ flags, mask=m)


def test_bool_tensors_in_memory() -> None:
    n = 300
    rng = np.random.default_rng(3)
    x = rng.standard_normal(n).astype(np.float32)
    flags = rng.random(n) < 0.5
    out = np.zeros(n, np.bool_)
    run_kernel(bool_io_kernel, (3,), x, flags, out, n, BLOCK=128)
    np.testing.assert_array_equal(out, (x > 0) ^ flags)
