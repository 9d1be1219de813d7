"""`tl.extra.libdevice` basics (tt.extern_elementwise on `__nv_*` symbols) against float64
references, and the refusal of a symbol msltrans does not know.

The kernels are compiled with libdevice bound to Triton's CUDA module, which is what gives
the IR its `__nv_*` calls (the plugin's module map decides this for real launches).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import triton
import triton.language as tl
import triton.language.extra.cuda.libdevice as cuda_libdevice
from triton._C.libtriton import ir
from triton.compiler import ASTSource
from triton.language.extra import libdevice

from msltrans.errors import MetalNonRecoverableError
from msltrans.ir import read_module
from msltrans.ir.frontend import FrontendOptions
from msltrans.ir.pipeline import make_ttgir, make_ttir
from msltrans.lower import MslProgram, lower_module
from tests.support.diff import assert_same_bits, launch, ulp_error

BLOCK = 128
OPS = ("tanh", "erf", "pow", "fmod", "copysign", "rint", "isnan", "atan2")
ULP = {"tanh": 2.5, "erf": 1.0, "pow": 1.0, "atan2": 1.5}


def compile_with_libdevice(fn: Any, signature: dict[str, str],
                           constexprs: dict[str, Any]) -> MslProgram:
    opt = FrontendOptions(num_warps=4)
    ctx = ir.context()
    ir.load_dialects(ctx)
    src = ASTSource(fn, {**signature, **dict.fromkeys(constexprs, "constexpr")}, constexprs)
    mod = src.make_ir(None, opt, {}, {"triton.language.extra.libdevice": cuda_libdevice}, ctx)
    make_ttir(mod, opt)
    make_ttgir(mod, opt)
    return lower_module(read_module(mod))


@triton.jit
def libdevice_kernel(x_ptr, y_ptr, out_ptr, flag_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, libdevice.tanh(x), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.erf(x), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.pow(tl.abs(x), y), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.fmod(x, y), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.copysign(x, y), mask=m)
    tl.store(out_ptr + 5 * n + offs, libdevice.rint(x), mask=m)
    tl.store(flag_ptr + offs, libdevice.isnan(x).to(tl.int32), mask=m)
    tl.store(out_ptr + 7 * n + offs, libdevice.atan2(x, y), mask=m)


def test_libdevice_basics() -> None:
    rng = np.random.default_rng(8)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -2.5, 2.5, 1e-45],
                        np.float32)
    x = np.concatenate([specials, (rng.standard_normal(700) * 3).astype(np.float32)])
    y = np.concatenate([specials[::-1], (rng.standard_normal(700) * 2).astype(np.float32)])
    n = len(x)
    out = np.zeros(len(OPS) * n, np.float32)
    flags = np.zeros(n, np.int32)
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "flag_ptr": "*i32",
           "n": "i32"}
    program = compile_with_libdevice(libdevice_kernel, sig, {"BLOCK": BLOCK})
    launch(program, (triton.cdiv(n, BLOCK),), x, y, out, flags, n)
    got = out.reshape(len(OPS), n)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        refs = {"tanh": np.tanh(x64), "erf": np.vectorize(math.erf)(x64),
                "pow": np.power(np.abs(x64), y64), "atan2": np.arctan2(x64, y64)}
        for op, ref in refs.items():
            k = OPS.index(op)
            ref32 = ref.astype(np.float32)
            special = ~np.isfinite(ref32) | (ref32 == 0)
            assert_same_bits(got[k][special], ref32[special], "float32", op)
            assert ulp_error(got[k][~special], ref[~special]).max() <= ULP[op], op
        assert_same_bits(got[3], np.fmod(x, y), "float32", "fmod")
        assert_same_bits(got[4], np.copysign(x, y), "float32", "copysign")
        assert_same_bits(got[5], np.rint(x), "float32", "rint")
    np.testing.assert_array_equal(flags, np.isnan(x).astype(np.int32))


@triton.jit
def sinpi_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, libdevice.sinpi(tl.load(x_ptr + offs)))


def test_unknown_libdevice_symbol_is_refused() -> None:
    with pytest.raises(MetalNonRecoverableError, match=r"__nv_sinpif.*no Metal equivalent.*"
                       r"ops_libdevice.py"):
        compile_with_libdevice(sinpi_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"},
                               {"BLOCK": BLOCK})
