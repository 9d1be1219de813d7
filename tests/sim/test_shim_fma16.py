"""`fma` on half rounds once (MSL Table 8.3), and msltrans's `fma(half, half, half)` for fp16
contraction gives the bits of the `msl_fma16<half>` emulation it replaced: both checked on
the simulator against exact rational arithmetic over edge values, subnormals, overflow,
NaN/inf, random bit patterns and sums that land next to a half midpoint (where an fmaf
rounded to half rounds twice and goes the wrong way)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from tests.support.shim import HEADER, compile_shader

SUPPORT = Path(__file__).resolve().parents[2] / "msltrans" / "templates" / \
    "elementwise_support.metal"
SRC = HEADER + SUPPORT.read_text() + """
kernel void fma16(device const ushort* a [[buffer(0)]], device const ushort* b [[buffer(1)]],
                  device const ushort* c [[buffer(2)]], device ushort* native [[buffer(3)]],
                  device ushort* emulated [[buffer(4)]], device ushort* vector [[buffer(5)]],
                  uint i [[thread_position_in_grid]]) {
    half x = as_type<half>(a[i]), y = as_type<half>(b[i]), z = as_type<half>(c[i]);
    native[i] = as_type<ushort>(fma(x, y, z));
    emulated[i] = as_type<ushort>(msl_fma16<half>(x, y, z));
    half2 v = fma(half2(x, y), half2(y, x), half2(z, z));   // the vector form, lane by lane
    vector[i] = v.x == v.y || (isnan(v.x) && isnan(v.y)) ? as_type<ushort>(v.x) : ushort(1);
}
"""
GROUP = 256
# Fixed point: every product of two halves and every half is a multiple of 2^-48.
UNIT = 48


def _scaled(bits: int) -> int:
    """A finite half as an integer multiple of 2^-24 (exact)."""
    return int(np.array([bits], np.uint16).view(np.float16)[0].astype(np.float64) * 2.0**24)


def _round(n: int, mant_bits: int, emin: int) -> int:
    """n * 2^-48 rounded to nearest-even in a binary format with `mant_bits` significant bits
    and smallest normal exponent `emin`, as an integer multiple of 2^-48 (range unbounded)."""
    if n == 0:
        return 0
    mag = abs(n)
    shift = max(mag.bit_length() - mant_bits, emin - (mant_bits - 1) + UNIT)
    if shift <= 0:
        return n
    q, r = divmod(mag, 1 << shift)
    half_way = 1 << (shift - 1)
    if r > half_way or (r == half_way and q & 1):
        q += 1
    return (q << shift) * (1 if n > 0 else -1)


def _half_bits(n: int, zero_sign: bool) -> int:
    """The half nearest n * 2^-48 (already rounded to half precision): its bits."""
    if n == 0:
        return 0x8000 if zero_sign else 0
    value = np.float64(n) * 2.0**-UNIT   # exact: <= 11 significant bits
    return int(np.array([value]).astype(np.float16).view(np.uint16)[0])


def reference(a: int, b: int, c: int, twice: bool = False) -> int:
    """fma(a, b, c) on halves (bits in and out), from the exact value. `twice`: an fmaf of the
    widened inputs rounded to half instead (the double rounding the shim must not do)."""
    x, y, z = (np.array([v], np.uint16).view(np.float16)[0].astype(np.float64)
               for v in (a, b, c))
    if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z)):
        with np.errstate(invalid="ignore"):
            out = np.array([x * y + z]).astype(np.float16)
        return int(out.view(np.uint16)[0])
    p = _scaled(a) * _scaled(b)
    n = p + (_scaled(c) << 24)
    neg = n < 0
    if n == 0:   # exact zero: -0 only when the product and c are zeros of the same sign
        product_neg = np.signbit(x) != np.signbit(y)
        neg = p == 0 and bool(np.signbit(z)) and bool(product_neg)
    if twice:
        n = _round(n, 24, -126)
    rounded = _round(n, 11, -14)
    if abs(rounded) > 65504 * 2**UNIT:
        return 0xFC00 if rounded < 0 else 0x7C00
    return _half_bits(rounded, neg)


def _edge_values() -> list[int]:
    magnitudes = [0x0000, 0x0001, 0x0002, 0x0200, 0x03FF, 0x0400, 0x0401, 0x1400, 0x3555,
                  0x3800, 0x3BFF, 0x3C00, 0x3C01, 0x4000, 0x4200, 0x5C00, 0x7BFE, 0x7BFF,
                  0x7C00, 0x7E00]
    return magnitudes + [m | 0x8000 for m in magnitudes]


def _midpoint_cases(rng: np.random.Generator, count: int) -> tuple[np.ndarray, ...]:
    """c a finite half, a*b within a few half ulps of an odd multiple of c's half ulp: the
    exact sum lies next to a midpoint between two halves."""
    c = rng.integers(0x0400, 0x7800, count, dtype=np.uint16)
    ulp = np.spacing(c.view(np.float16)).astype(np.float64)
    target = ulp * (rng.integers(0, 8, count) * 2 + 1) / 2
    a = rng.integers(0x3C00, 0x4000, count, dtype=np.uint16)   # [1, 2)
    b = (target / a.view(np.float16).astype(np.float64)).astype(np.float16).view(np.uint16)
    b = (b.astype(np.int64) + rng.integers(-3, 4, count)).clip(1, 0x7BFF).astype(np.uint16)
    sign = rng.integers(0, 2, (3, count), dtype=np.uint16) << 15
    return a | sign[0], b | sign[1], c | sign[2]


@cache
def _run(which: str) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(16)
    if which == "edges":
        edges = np.array(_edge_values(), np.uint16)
        a, b, c = (g.ravel() for g in np.meshgrid(edges, edges, edges, indexing="ij"))
    elif which == "random":
        a, b, c = rng.integers(0, 1 << 16, (3, 64 * GROUP), dtype=np.uint16)
    else:
        a, b, c = _midpoint_cases(rng, 64 * GROUP)
    n = len(a)
    padded = (n + GROUP - 1) // GROUP * GROUP
    ins = [np.zeros(padded, np.uint16) for _ in range(3)]
    for dst, src in zip(ins, (a, b, c), strict=True):
        dst[:n] = src
    outs = [np.zeros(padded, np.uint16) for _ in range(3)]
    compile_shader(SRC).fma16(*ins, *outs, threads=padded, group_size=GROUP)
    return a, b, c, outs[0][:n], outs[1][:n], outs[2][:n]


def _same(x: int, y: int) -> bool:
    nan_x = (x & 0x7C00) == 0x7C00 and x & 0x3FF
    nan_y = (y & 0x7C00) == 0x7C00 and y & 0x3FF
    return bool(nan_x and nan_y) or x == y


@pytest.mark.parametrize("which", ["edges", "random", "midpoints"])
def test_half_fma_is_correctly_rounded_and_equals_the_emulation(which: str) -> None:
    a, b, c, native, emulated, vector = _run(which)
    wrong_native, wrong_emulated, twice_wrong = [], [], 0
    for i in range(len(a)):
        want = reference(int(a[i]), int(b[i]), int(c[i]))
        if not _same(int(native[i]), want):
            wrong_native.append((hex(a[i]), hex(b[i]), hex(c[i]), hex(native[i]), hex(want)))
        if not _same(int(emulated[i]), want):
            wrong_emulated.append((hex(a[i]), hex(b[i]), hex(c[i]), hex(emulated[i]),
                                   hex(want)))
        if which == "midpoints":
            twice_wrong += not _same(reference(int(a[i]), int(b[i]), int(c[i]), True), want)
    assert not wrong_native[:5], f"{len(wrong_native)} wrong fma(half): {wrong_native[:5]}"
    assert not wrong_emulated[:5], f"{len(wrong_emulated)} wrong msl_fma16: {wrong_emulated[:5]}"
    np.testing.assert_array_equal(vector, native)   # half2 lanes == the scalar results
    if which == "midpoints":
        # The cases have teeth: an fmaf rounded to half gets some of them wrong.
        assert twice_wrong >= 20
    if which == "edges":   # subnormal results, overflow to inf and NaN all occur
        results = native.astype(np.int64)
        assert ((results & 0x7C00) == 0).any() and ((results & 0x7FFF) == 0x7C00).any()
        assert (((results & 0x7C00) == 0x7C00) & ((results & 0x3FF) != 0)).any()
