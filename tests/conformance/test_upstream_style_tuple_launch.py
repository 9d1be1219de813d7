"""Upstream-style launches and tuples (test_core's test_program_id / test_num_programs on 3-D
grids, test_value_specialization, test_constexpr, test_default, test_none_args,
test_num_warps_pow2; test_tuple's test_index, test_assign, test_assign_return,
test_passing_tuple_with_constexpr, test_namedtuple, nested tuples; test_launch's grid
callables and re-specialisation), written for this project. All launched as `kernel[grid]`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from tests.conformance.upstream_style_support import require_metal_sim


@pytest.fixture(scope="module", autouse=True)
def _metal_sim() -> None:
    require_metal_sim()


@triton.jit
def _grid_ids(Z):
    x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    nx, ny, nz = tl.num_programs(0), tl.num_programs(1), tl.num_programs(2)
    base = Z + ((z * ny + y) * nx + x) * 6
    tl.store(base + 0, x)
    tl.store(base + 1, y)
    tl.store(base + 2, z)
    tl.store(base + 3, nx)
    tl.store(base + 4, ny)
    tl.store(base + 5, nz)


@pytest.mark.parametrize("grid", [(1, 1, 1), (3, 2, 4), (5, 1, 2), (1, 7, 1), (2, 3)])
def test_program_id_num_programs_3d(grid: tuple[int, ...]) -> None:
    g = (tuple(grid) + (1, 1))[:3]
    z = torch.full((int(np.prod(g)) * 6 + 8,), -1, dtype=torch.int32)
    _grid_ids[grid](z)
    got = z[: int(np.prod(g)) * 6].reshape(g[2], g[1], g[0], 6)
    zz, yy, xx = np.meshgrid(range(g[2]), range(g[1]), range(g[0]), indexing="ij")
    ref = np.stack([xx, yy, zz] + [np.full_like(xx, v) for v in g], axis=-1)
    np.testing.assert_array_equal(got.numpy(), ref)
    assert torch.all(z[int(np.prod(g)) * 6:] == -1)


@triton.jit
def _scaled_copy(X, Z, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Z + offs, tl.load(X + offs, mask=m) * scale, mask=m)


@pytest.mark.parametrize("block", [32, 128])
def test_grid_callable_sees_meta(block: int) -> None:
    n = 1000
    x, z = torch.randn(n), torch.zeros(n)
    seen = []

    def grid(meta: dict) -> tuple[int]:
        seen.append(meta["BLOCK"])
        return (triton.cdiv(n, meta["BLOCK"]),)

    _scaled_copy[grid](x, z, n, 2.0, BLOCK=block)
    assert seen == [block] and torch.equal(z, x * 2.0)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_num_warps(num_warps: int) -> None:
    n = 777
    x, z = torch.randn(n), torch.zeros(n)
    _scaled_copy[(triton.cdiv(n, 256),)](x, z, n, -0.5, BLOCK=256, num_warps=num_warps)
    assert torch.equal(z, x * -0.5)


@pytest.mark.parametrize("n", [1, 16, 17, 2**31 + 5])
def test_value_specialization(n: int) -> None:
    """n == 1 and n % 16 == 0 specialise the kernel; > 2**31 makes n an i64 argument."""
    x, z = torch.arange(64, dtype=torch.float32), torch.zeros(64)
    _scaled_copy[(1,)](x, z, n, 3.0, BLOCK=64)
    k = min(n, 64)
    assert torch.equal(z[:k], x[:k] * 3.0) and torch.all(z[k:] == 0)


@pytest.mark.parametrize("scale", [True, 7, -(2**40), 0.25])
def test_scalar_argument_types(scale: float) -> None:
    """bool, i32, i64 and fp32 scalars reach the kernel with their values."""
    x = torch.arange(-8, 8, dtype=torch.int64)
    z = torch.zeros(16, dtype=torch.float32 if isinstance(scale, float) else torch.int64)
    _scaled_copy[(1,)](x, z, 16, scale, BLOCK=16)
    assert torch.equal(z, (x * scale).to(z.dtype))


@triton.jit
def _defaults(X, Z, Y=None, ADD: tl.constexpr = 5, BLOCK: tl.constexpr = 16):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    if Y is not None:
        x += tl.load(Y + offs)
    tl.store(Z + offs, x + ADD)


@pytest.mark.parametrize("with_y, add", [(False, None), (True, None), (False, -2),
                                         (True, 100)])
def test_none_and_default_constexpr_args(with_y: bool, add: int | None) -> None:
    x, y = torch.arange(16, dtype=torch.int32), torch.full((16,), 1000, dtype=torch.int32)
    z = torch.zeros(16, dtype=torch.int32)
    kwargs = {} if add is None else {"ADD": add}
    _defaults[(1,)](x, z, y if with_y else None, **kwargs)
    assert torch.equal(z, x + (y if with_y else 0) + (5 if add is None else add))


def test_respecialises_on_dtype() -> None:
    for dtype in (torch.float16, torch.int8, torch.float32):
        x = torch.arange(16).to(dtype)
        z = torch.zeros(16, dtype=dtype)
        _defaults[(1,)](x, z)
        assert torch.equal(z, x + 5)


def test_strided_tensor_without_stride_args_uses_storage_offset() -> None:
    base = torch.arange(100, dtype=torch.float32)
    z = torch.zeros(30)
    _scaled_copy[(1,)](base[40:70], z, 30, 1.0, BLOCK=32)
    assert torch.equal(z, base[40:70])


# ----------------------------------------------------------------------------------- tuples


@triton.jit
def _tuple_add_one(vals):
    out = ()
    for i in tl.static_range(len(vals)):
        out = out + (vals[i] + 1,)
    return out


@triton.jit
def _tuple_index(Ptrs, values, OFFSET: tl.constexpr):
    vals = _tuple_add_one(values)
    for i in tl.static_range(len(Ptrs)):
        tl.store(Ptrs[i], vals[i] + OFFSET)


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_tuple_of_pointers_and_scalars(size: int) -> None:
    vals = tuple(range(10, 10 + size))
    outs = tuple(torch.zeros(1, dtype=torch.int32) for _ in vals)
    _tuple_index[(1,)](outs, vals, OFFSET=100)
    assert [int(o.item()) for o in outs] == [v + 101 for v in vals]


@triton.jit
def _tuple_ret(a, b):
    return a + b, a - b, a * b


@triton.jit
def _tuple_assign(X, Outs, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    s, d, p = _tuple_ret(x, 3)
    O0, O1, O2 = Outs
    tl.store(O0 + offs, s)
    tl.store(O1 + offs, d)
    tl.store(O2 + offs, p)


def test_tuple_returned_from_jit_function() -> None:
    x = torch.arange(-4, 12, dtype=torch.int32)
    outs = tuple(torch.zeros(16, dtype=torch.int32) for _ in range(3))
    _tuple_assign[(1,)](x, outs, BLOCK=16)
    assert torch.equal(outs[0], x + 3) and torch.equal(outs[1], x - 3)
    assert torch.equal(outs[2], x * 3)


@triton.jit
def _nested_tuple(Z, t, SHAPE: tl.constexpr):
    (a, (b, c)), d = t
    offs = tl.arange(0, SHAPE[0] * SHAPE[1])
    tl.store(Z + offs, offs * a + b * 100 + c * 10 + d)


@pytest.mark.parametrize("shape", [(4, 8), (2, 16)])
def test_nested_tuple_with_constexpr_tuple(shape: tuple[int, int]) -> None:
    z = torch.zeros(32, dtype=torch.int32)
    _nested_tuple[(1,)](z, ((2, (3, 4)), 5), SHAPE=shape)
    assert torch.equal(z, torch.arange(32, dtype=torch.int32) * 2 + 345)


class _Args(NamedTuple):
    x: torch.Tensor
    scale: float
    out: torch.Tensor


@triton.jit
def _namedtuple(args, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(args.out + offs, tl.load(args.x + offs) * args.scale)


def test_namedtuple_argument() -> None:
    x = torch.randn(32)
    args = _Args(x, 4.0, torch.zeros(32))
    _namedtuple[(1,)](args, BLOCK=32)
    assert torch.equal(args.out, x * 4.0)


@triton.jit
def _tuple_mixed_constexpr(Z, t):
    tl.store(Z, t[0] * 10 + t[1])


@pytest.mark.parametrize("first", [1, 7])
def test_tuple_with_mixed_constexpr_and_runtime(first: int) -> None:
    z = torch.zeros(1, dtype=torch.int32)
    _tuple_mixed_constexpr[(1,)](z, (tl.constexpr(first), 3))
    assert z.item() == first * 10 + 3
