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
from triton.language.extra import libdevice

from msltrans import toolchain
from msltrans.errors import MetalNonRecoverableError
from msltrans.lower import MslProgram
from tests.support.diff import assert_same_bits, launch, ulp_error

BLOCK = 128
OPS = ("tanh", "erf", "pow", "fmod", "copysign", "rint", "isnan", "atan2")
ULP = {"tanh": 2.5, "erf": 1.0, "pow": 1.0, "atan2": 1.5}


def compile_with_libdevice(fn: Any, signature: dict[str, str],
                           constexprs: dict[str, Any]) -> MslProgram:
    """Through the plugin's stages (its module map sends `tl.extra.libdevice` to CUDA's)."""
    return toolchain.compile_kernel(fn, signature, constexprs, num_warps=4).program


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
def int_bits_kernel(x_ptr, w_ptr, out_ptr, wide_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    w = tl.load(w_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, libdevice.popc(x))
    tl.store(out_ptr + 1 * BLOCK + offs, libdevice.clz(x))
    tl.store(out_ptr + 2 * BLOCK + offs, libdevice.brev(x))
    tl.store(out_ptr + 3 * BLOCK + offs, libdevice.ffs(x))
    tl.store(out_ptr + 4 * BLOCK + offs, libdevice.popc(w))
    tl.store(out_ptr + 5 * BLOCK + offs, libdevice.clz(w))
    tl.store(out_ptr + 6 * BLOCK + offs, libdevice.ffs(w))
    tl.store(wide_ptr + offs, libdevice.brev(w))


def _bits(v: int, width: int) -> str:
    return format(v % (1 << width), f"0{width}b")


def test_libdevice_integer_bits() -> None:
    """__nv_popc/clz/brev/ffs (and the ll forms) against their definitions on the bits,
    zero, -1 and the sign bit included (CUDA: clz(0) = width, ffs(0) = 0)."""
    rng = np.random.default_rng(4)
    x = np.concatenate([np.array([0, 1, -1, 2**31 - 1, -(2**31), 8, 12, 2**30], np.int32),
                        rng.integers(-(2**31), 2**31, BLOCK - 8).astype(np.int32)])
    w = np.concatenate([np.array([0, 1, -1, 2**63 - 1, -(2**63), 2**40, 3 << 50, 2**32],
                                 np.int64), rng.integers(-(2**63), 2**63, BLOCK - 8)])
    out = np.zeros(7 * BLOCK, np.int32)
    wide = np.zeros(BLOCK, np.int64)
    program = compile_with_libdevice(int_bits_kernel, {"x_ptr": "*i32", "w_ptr": "*i64",
                                                       "out_ptr": "*i32", "wide_ptr": "*i64"},
                                     {"BLOCK": BLOCK})
    launch(program, (1,), x, w, out, wide)
    got = out.reshape(7, BLOCK)
    for v, width, (popc, clz, ffs) in [(int(a), 32, (got[0][i], got[1][i], got[3][i]))
                                       for i, a in enumerate(x)] + \
            [(int(a), 64, (got[4][i], got[5][i], got[6][i])) for i, a in enumerate(w)]:
        b = _bits(v, width)
        assert popc == b.count("1"), (v, width)
        assert clz == (b.index("1") if "1" in b else width), (v, width)
        assert ffs == (width - b.rindex("1") if "1" in b else 0), (v, width)
    brev32 = [int(_bits(int(a), 32)[::-1], 2) for a in x]
    brev64 = [int(_bits(int(a), 64)[::-1], 2) for a in w]
    np.testing.assert_array_equal(got[2].view(np.uint32), np.array(brev32, np.uint32))
    np.testing.assert_array_equal(wide.view(np.uint64), np.array(brev64, np.uint64))


@triton.jit
def sinpi_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, libdevice.sinpi(tl.load(x_ptr + offs)))


def test_unknown_libdevice_symbol_is_refused() -> None:
    with pytest.raises(MetalNonRecoverableError, match=r"__nv_sinpif.*no Metal equivalent.*"
                       r"ops_libdevice.py"):
        compile_with_libdevice(sinpi_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"},
                               {"BLOCK": BLOCK})
