"""A fast subset in the style of Triton's `test_core.py`, written for this project.

`@triton.jit` kernels launched through the Metal plugin on CPU tensors, checked against numpy
the way upstream's `_test_unary` / `_test_binary` / `test_where` / `test_reduce1d` do, over a few
dtypes each. The full upstream suite runs through `scripts/run_upstream_tests.py`.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

SIZE = 128


@pytest.fixture(scope="module", autouse=True)
def _metal_sim() -> None:
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("runs compiled kernels, not the interpreter")
    if triton.runtime.driver.active.get_current_target().backend != "metal":
        pytest.skip("the active Triton driver is not msltrans's")


def _device() -> torch.device:
    return triton.runtime.driver.active.get_active_torch_device()


def _rand(dtype: str, n: int = SIZE, seed: int = 17, positive: bool = False) -> np.ndarray:
    rs = np.random.RandomState(seed)
    if dtype.startswith("float"):
        x = rs.randn(n).astype(dtype)
        return np.abs(x) + 0.5 if positive else x
    info = np.iinfo(dtype)
    low = 1 if positive else max(info.min, -100)
    return rs.randint(low, min(info.max, 100), size=n).astype(dtype)


@triton.jit
def _binary(X, Y, Z, OP: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    if OP == "add":
        z = x + y
    elif OP == "sub":
        z = x - y
    elif OP == "mul":
        z = x * y
    elif OP == "max":
        z = tl.maximum(x, y)
    else:
        z = x % y
    tl.store(Z + offs, z)


NP_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
             "mod": np.fmod}


@pytest.mark.parametrize("dtype", ["int32", "int16", "float32", "float16"])
@pytest.mark.parametrize("op", list(NP_BINARY))
def test_bin_op_style(dtype: str, op: str) -> None:
    x, y = _rand(dtype, seed=1), _rand(dtype, seed=2, positive=True)
    z = torch.empty(SIZE, dtype=getattr(torch, dtype), device=_device())
    _binary[(1,)](torch.from_numpy(x), torch.from_numpy(y), z, OP=op, N=SIZE)
    ref = NP_BINARY[op](x, y).astype(dtype)
    if dtype.startswith("float"):
        np.testing.assert_allclose(z.numpy(), ref, rtol=1e-3 if dtype == "float16" else 1e-6)
    else:
        np.testing.assert_array_equal(z.numpy(), ref)


@triton.jit
def _unary(X, Z, OP: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    if OP == "exp":
        z = tl.exp(x)
    elif OP == "sqrt":
        z = tl.sqrt(tl.abs(x))
    else:
        z = -x
    tl.store(Z + offs, z)


@pytest.mark.parametrize("op", ["exp", "sqrt", "neg"])
def test_unary_op_style(op: str) -> None:
    x = _rand("float32")
    z = torch.empty(SIZE, dtype=torch.float32, device=_device())
    _unary[(1,)](torch.from_numpy(x), z, OP=op, N=SIZE)
    ref = {"exp": np.exp, "sqrt": lambda v: np.sqrt(np.abs(v)), "neg": np.negative}[op](x)
    np.testing.assert_allclose(z.numpy(), ref, rtol=1e-6)


@triton.jit
def _where(C, X, Y, Z, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Z + offs, tl.where(tl.load(C + offs) != 0, tl.load(X + offs), tl.load(Y + offs)))


def test_where_style() -> None:
    c = (_rand("int32", seed=3) > 0).astype("int8")
    x, y = _rand("float32", seed=4), _rand("float32", seed=5)
    z = torch.empty(SIZE, dtype=torch.float32, device=_device())
    _where[(1,)](torch.from_numpy(c), torch.from_numpy(x), torch.from_numpy(y), z, N=SIZE)
    np.testing.assert_array_equal(z.numpy(), np.where(c != 0, x, y))


@triton.jit
def _reduce(X, Z, OP: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    if OP == "sum":
        z = tl.sum(x, axis=0)
    elif OP == "max":
        z = tl.max(x, axis=0)
    else:
        z = tl.argmin(x, axis=0)
    tl.store(Z, z)


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("op", ["sum", "max", "argmin"])
def test_reduce1d_style(op: str, num_warps: int) -> None:
    x = _rand("int32", seed=6)
    out_dtype = torch.int32
    z = torch.zeros(1, dtype=out_dtype, device=_device())
    _reduce[(1,)](torch.from_numpy(x), z, OP=op, N=SIZE, num_warps=num_warps)
    ref = {"sum": np.sum, "max": np.max, "argmin": np.argmin}[op](x)
    assert int(z.item()) == int(ref)


@triton.jit
def _cast(X, Z, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Z + offs, tl.load(X + offs).to(Z.dtype.element_ty))


@pytest.mark.parametrize("src,dst", [("int32", "float32"), ("float32", "int16"),
                                     ("float32", "float16"), ("int16", "int8")])
def test_cast_style(src: str, dst: str) -> None:
    x = _rand(src, seed=7)
    z = torch.empty(SIZE, dtype=getattr(torch, dst), device=_device())
    _cast[(1,)](torch.from_numpy(x), z, N=SIZE)
    ref = torch.from_numpy(x).to(getattr(torch, dst))  # same rounding/truncation as Triton
    assert torch.equal(z, ref)


@triton.jit
def _libdevice(X, Z, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    tl.store(Z + offs, libdevice.exp(x) + libdevice.erf(x))


def test_libdevice_through_module_map() -> None:
    x = np.linspace(-2, 2, SIZE, dtype="float32")
    z = torch.empty(SIZE, dtype=torch.float32, device=_device())
    _libdevice[(1,)](torch.from_numpy(x), z, N=SIZE)
    xt = torch.from_numpy(x)
    torch.testing.assert_close(z, torch.exp(xt) + torch.erf(xt), rtol=1e-5, atol=1e-6)
