"""CUDA's integer intrinsics through `tl.extra.libdevice` (`__nv_mulhi`, `__nv_umul24`,
`__nv_sad`, `__nv_hadd`, `__nv_byte_perm`, ...) against their definitions computed with Python
integers: every pair of edge values (0, ±1, INT_MIN, INT_MAX, the 24-bit boundaries, ...)
and random operands. Signed and unsigned forms are picked by Triton from the tensors' dtypes
(int32 → `__nv_mulhi`, uint32 → `__nv_umulhi`, int64 → `__nv_mul64hi`, ...).
The bit functions (popc, clz, brev, ffs) are tested in test_diff_libdevice.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import triton
import triton.language as tl
from triton.language import core
from triton.language.extra import libdevice

from msltrans.errors import MetalNonRecoverableError
from tests.e2e.test_diff_libdevice import compile_with_libdevice
from tests.support.diff import launch

BLOCK = 512
EDGE32 = [0, 1, -1, 2, -2, 2**31 - 1, -(2**31), 2**31 - 2, -(2**31) + 1, 0x7FFFFF, 0x800000,
          -0x800000, 0xFFFFFF, 0x1000000, 0x12345678, -0x12345678, 0x00FF00FF, 3]
EDGE64 = [0, 1, -1, 2, 2**63 - 1, -(2**63), 2**32 - 1, 2**32, -(2**32), 2**62 + 12345,
          -(2**40) - 7, 0x0123456789ABCDEF, 3, -3, 2**31, -(2**31)]
S32, S64 = 32, 64


def _wrap(v: int, bits: int, signed: bool) -> int:
    v %= 1 << bits
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def _pairs(edge: list[int], bits: int, n: int, seed: int) -> tuple[list[int], list[int]]:
    """Every ordered pair of edge values, then random operands, n in all."""
    pairs = list(itertools.product(edge, edge))[:n]
    rng = np.random.default_rng(seed)
    rand = [(int(a), int(b)) for a, b in rng.integers(-(2**(bits - 1)), 2**(bits - 1),
                                                     (n - len(pairs), 2), dtype=np.int64)]
    x, y = zip(*(pairs + rand), strict=True)
    return list(x), list(y)


@triton.jit
def int32_kernel(x_ptr, y_ptr, s_ptr, ux_ptr, uy_ptr, uz_ptr, out_ptr, uout_ptr,
                 BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    s = tl.load(s_ptr + offs)
    ux = tl.load(ux_ptr + offs)
    uy = tl.load(uy_ptr + offs)
    uz = tl.load(uz_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, libdevice.mulhi(x, y))
    tl.store(out_ptr + 1 * BLOCK + offs, libdevice.mul24(x, y))
    tl.store(out_ptr + 2 * BLOCK + offs, libdevice.sad(x, y, uz))
    tl.store(out_ptr + 3 * BLOCK + offs, libdevice.hadd(x, y))
    tl.store(out_ptr + 4 * BLOCK + offs, libdevice.rhadd(x, y))
    tl.store(out_ptr + 5 * BLOCK + offs, libdevice.abs(x))
    tl.store(out_ptr + 6 * BLOCK + offs, libdevice.byte_perm(x, y, s))
    tl.store(uout_ptr + 0 * BLOCK + offs, libdevice.mulhi(ux, uy))
    tl.store(uout_ptr + 1 * BLOCK + offs, libdevice.mul24(ux, uy))
    tl.store(uout_ptr + 2 * BLOCK + offs, libdevice.sad(ux, uy, uz))
    tl.store(uout_ptr + 3 * BLOCK + offs, libdevice.hadd(ux, uy))
    tl.store(uout_ptr + 4 * BLOCK + offs, libdevice.rhadd(ux, uy))


def _sext24(v: int) -> int:
    v &= 0xFFFFFF
    return v - (1 << 24) if v & 0x800000 else v


def _byte_perm(x: int, y: int, s: int) -> int:
    """PTX prmt's default mode on the eight bytes y:x, selector nibbles masked to 3 bits."""
    src = ((y % 2**32) << 32) | (x % 2**32)
    return sum(((src >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4))


def test_int32_intrinsics() -> None:
    x, y = _pairs(EDGE32, S32, BLOCK, seed=1)
    rng = np.random.default_rng(2)
    s = [0x3210, 0x7654, 0x0123, 0x4444, 0x7777, 0x5140, -1, 0xFFFF8888] + \
        [int(v) for v in rng.integers(0, 2**32, BLOCK - 8)]
    z = [0, 1, 2**32 - 1, 2**31] * 4 + [int(v) for v in rng.integers(0, 2**32, BLOCK - 16)]
    ux, uy = [v % 2**32 for v in x], [v % 2**32 for v in y]
    arrays = (np.array(x, np.int32), np.array(y, np.int32),
              np.array([_wrap(v, S32, True) for v in s], np.int32),
              np.array(ux, np.uint32), np.array(uy, np.uint32), np.array(z, np.uint32),
              np.zeros(7 * BLOCK, np.int32), np.zeros(5 * BLOCK, np.uint32))
    sig = {"x_ptr": "*i32", "y_ptr": "*i32", "s_ptr": "*i32", "ux_ptr": "*u32",
           "uy_ptr": "*u32", "uz_ptr": "*u32", "out_ptr": "*i32", "uout_ptr": "*u32"}
    program = compile_with_libdevice(int32_kernel, sig, {"BLOCK": BLOCK})
    launch(program, (1,), *arrays)
    out, uout = arrays[6].reshape(7, BLOCK), arrays[7].reshape(5, BLOCK)
    signed = {  # name → (row, definition on Python ints)
        "mulhi": (0, lambda a, b, c, sel: (a * b) >> 32),
        "mul24": (1, lambda a, b, c, sel: _sext24(a) * _sext24(b)),
        "sad": (2, lambda a, b, c, sel: abs(a - b) + c),
        "hadd": (3, lambda a, b, c, sel: (a + b) >> 1),
        "rhadd": (4, lambda a, b, c, sel: (a + b + 1) >> 1),
        "abs": (5, lambda a, b, c, sel: abs(a)),
        "byte_perm": (6, lambda a, b, c, sel: _byte_perm(a, b, sel)),
    }
    for name, (row, fn) in signed.items():
        want = [_wrap(fn(a, b, c, sel), S32, True) for a, b, c, sel in zip(x, y, z, s, strict=True)]
        np.testing.assert_array_equal(out[row], np.array(want, np.int32), err_msg=name)
    unsigned = {
        "umulhi": (0, lambda a, b, c: (a * b) >> 32),
        "umul24": (1, lambda a, b, c: (a & 0xFFFFFF) * (b & 0xFFFFFF)),
        "usad": (2, lambda a, b, c: abs(a - b) + c),
        "uhadd": (3, lambda a, b, c: (a + b) >> 1),
        "urhadd": (4, lambda a, b, c: (a + b + 1) >> 1),
    }
    for name, (row, fn) in unsigned.items():
        want = [fn(a, b, c) % 2**32 for a, b, c in zip(ux, uy, z, strict=True)]
        np.testing.assert_array_equal(uout[row], np.array(want, np.uint32), err_msg=name)


@triton.jit
def int64_kernel(w_ptr, v_ptr, uw_ptr, uv_ptr, out_ptr, uout_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    w = tl.load(w_ptr + offs)
    v = tl.load(v_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, libdevice.mulhi(w, v))
    tl.store(out_ptr + 1 * BLOCK + offs, libdevice.abs(w))
    tl.store(uout_ptr + offs, libdevice.mulhi(tl.load(uw_ptr + offs), tl.load(uv_ptr + offs)))


def test_int64_intrinsics() -> None:
    """__nv_mul64hi / __nv_umul64hi (the high word of the 128-bit product) and __nv_llabs."""
    w, v = _pairs(EDGE64, S64, 256, seed=3)
    uw, uv = [a % 2**64 for a in w], [b % 2**64 for b in v]
    arrays = (np.array(w, np.int64), np.array(v, np.int64), np.array(uw, np.uint64),
              np.array(uv, np.uint64), np.zeros(2 * 256, np.int64), np.zeros(256, np.uint64))
    sig = {"w_ptr": "*i64", "v_ptr": "*i64", "uw_ptr": "*u64", "uv_ptr": "*u64",
           "out_ptr": "*i64", "uout_ptr": "*u64"}
    program = compile_with_libdevice(int64_kernel, sig, {"BLOCK": 256})
    launch(program, (1,), *arrays)
    out = arrays[4].reshape(2, 256)
    hi = [(a * b) >> 64 for a, b in zip(w, v, strict=True)]
    np.testing.assert_array_equal(out[0], np.array(hi, np.int64), err_msg="mul64hi")
    np.testing.assert_array_equal(out[1], np.array([_wrap(abs(a), S64, True) for a in w],
                                                   np.int64), err_msg="llabs")
    np.testing.assert_array_equal(arrays[5], np.array(
        [(a * b) >> 64 for a, b in zip(uw, uv, strict=True)], np.uint64), err_msg="umul64hi")


@core.extern
def _mulhi_on_i64(a, b, _semantic=None):  # noqa: ANN001, ANN202
    """A hand-written extern call: the i32 symbol __nv_mulhi on int64 values."""
    i64 = core.dtype("int64")
    return core.extern_elementwise("", "", [a, b], {(i64, i64): ("__nv_mulhi", i64)},
                                   is_pure=True, _semantic=_semantic)


@triton.jit
def wrong_width_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, _mulhi_on_i64(x, x))


def test_intrinsic_on_an_unexpected_width_is_refused() -> None:
    with pytest.raises(MetalNonRecoverableError, match=r"__nv_mulhi on long, long.*"
                                                       r"takes \(int, int\)"):
        compile_with_libdevice(wrong_width_kernel, {"x_ptr": "*i64", "out_ptr": "*i64"},
                               {"BLOCK": 32})
