"""tt.map_elementwise: a user scalar function (with if/return control flow, several results,
pack > 1) applied per element; refusals for what may not run per element."""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from tests.support.run_kernel import compile_kernel, run_kernel


@triton.jit
def compare(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@triton.jit
def compare_kernel(X, Y, Z, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m)
    y = tl.load(Y + offs, mask=m)
    z = tl.map_elementwise(compare, x, y)
    tl.store(Z + offs, z, mask=m)


def _ints(dtype: type, n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(-4, 4, n).astype(dtype)  # small range: many equal pairs


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8, np.float32])
def test_compare_with_branches(num_warps: int, dtype: type) -> None:
    rng = np.random.default_rng(num_warps)
    n, block = 777, 256
    x, y = _ints(dtype, n, rng), _ints(dtype, n, rng)
    x[:3] = y[:3]
    z = np.full(n, 99, np.int32)
    program = run_kernel(compare_kernel, ((n + block - 1) // block,), x, y, z, n,
                         num_warps=num_warps, BLOCK=block)
    assert "tt.map_elementwise.return" in program.source
    ref = (x > y).astype(np.int32) - (y > x).astype(np.int32)
    assert z.tobytes() == ref.tobytes()


@triton.jit
def divmod_fn(a, b):
    return a // b, a % b


@triton.jit
def divmod_pack2(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@triton.jit
def divmod_pack4(a0, a1, a2, a3, b0, b1, b2, b3):
    return (a0 // b0, a1 // b1, a2 // b2, a3 // b3, a0 % b0, a1 % b1, a2 % b2, a3 % b3)


@triton.jit
def divmod_kernel(A, B, C, D, n, BLOCK: tl.constexpr, PACK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(A + offs, mask=m, other=0)
    b = tl.load(B + offs, mask=m, other=1)
    if PACK == 1:
        c, d = tl.map_elementwise(divmod_fn, a, b)
    elif PACK == 2:
        c, d = tl.map_elementwise(divmod_pack2, a, b, pack=2)
    else:
        c, d = tl.map_elementwise(divmod_pack4, a, b, pack=4)
    tl.store(C + offs, c, mask=m)
    tl.store(D + offs, d, mask=m)


@pytest.mark.parametrize("pack", [1, 2, 4])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("dtype", [np.uint32, np.int64])
def test_divmod_multiple_outputs(pack: int, num_warps: int, dtype: type) -> None:
    rng = np.random.default_rng(pack * 10 + num_warps)
    n, block = 1531, 1024
    hi = 2**62 if dtype is np.int64 else 2**32
    a = rng.integers(0, hi, n, dtype=np.uint64).astype(dtype)
    b = rng.integers(1, 1 << 20, n).astype(dtype)
    c, d = np.zeros(n, dtype), np.zeros(n, dtype)
    run_kernel(divmod_kernel, ((n + block - 1) // block,), a, b, c, d, n,
               num_warps=num_warps, BLOCK=block, PACK=pack)
    assert c.tobytes() == (a // b).tobytes()  # non-negative: truncation = floor
    assert d.tobytes() == (a % b).tobytes()


def test_pack_not_dividing_registers_is_refused() -> None:
    a = np.zeros(128, np.uint32)
    with pytest.raises(MetalNonRecoverableError, match="does not divide"):
        compile_kernel(divmod_kernel, (a, a, a, a, 128), 4, BLOCK=128, PACK=2)


@triton.jit
def load_fn(p):
    return tl.load(p) + 1


@triton.jit
def load_inside_kernel(X, Z, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    z = tl.map_elementwise(load_fn, X + offs)
    tl.store(Z + offs, z)


def test_memory_op_inside_function_is_refused() -> None:
    x = np.zeros(128, np.int32)
    with pytest.raises(MetalNonRecoverableError, match="inside a tl.map_elementwise"):
        compile_kernel(load_inside_kernel, (x, x), 4, BLOCK=128)
