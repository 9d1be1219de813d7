"""Differential suite, conversions: float → every integer type (NVIDIA's saturation rules,
incl. the 16-bit intermediate of 8-bit targets), f32 → f16/bf16 rounded to nearest even and
toward zero, and integers → f32/f16/bf16 (one correct rounding, also from 64 bits).
References: tests/data/cuda/elementwise_semantics.npz where recorded, models otherwise.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import triton
import triton.language as tl

from tests.support.diff import (
    TRITON_PTR,
    as_float,
    assert_same_bits,
    bf16_from_f32,
    compile_typed,
    cuda_reference,
    launch,
    np_dtype,
)
from tests.support.values import float_edge_values, int_edge_values

NPZ = cuda_reference("elementwise_semantics")
EXTRA = cuda_reference("elementwise_semantics_extra")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
BLOCK = 128


@triton.jit
def to_ints_kernel(x_ptr, o0, o1, o2, o3, o4, o5, o6, o7, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(o0 + offs, x.to(tl.int8), mask=m)
    tl.store(o1 + offs, x.to(tl.int16), mask=m)
    tl.store(o2 + offs, x.to(tl.int32), mask=m)
    tl.store(o3 + offs, x.to(tl.int64), mask=m)
    tl.store(o4 + offs, x.to(tl.uint8), mask=m)
    tl.store(o5 + offs, x.to(tl.uint16), mask=m)
    tl.store(o6 + offs, x.to(tl.uint32), mask=m)
    tl.store(o7 + offs, x.to(tl.uint64), mask=m)


@triton.jit
def to_floats_kernel(x_ptr, f32_ptr, f16_ptr, bf16_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(f32_ptr + offs, x.to(tl.float32), mask=m)
    tl.store(f16_ptr + offs, x.to(tl.float16), mask=m)
    tl.store(bf16_ptr + offs, x.to(tl.bfloat16), mask=m)


@triton.jit
def downcast_kernel(x_ptr, h_ne, h_z, b_ne, b_z, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(h_ne + offs, x.to(tl.float16), mask=m)
    tl.store(h_z + offs, x.to(tl.float16, fp_downcast_rounding="rtz"), mask=m)
    tl.store(b_ne + offs, x.to(tl.bfloat16), mask=m)
    tl.store(b_z + offs, x.to(tl.bfloat16, fp_downcast_rounding="rtz"), mask=m)


def float_to_int_model(x: float, dst: str) -> int:
    """Round toward zero, NaN → 0 (64-bit: 0x8000...0), saturate (8-bit targets: at 16
    bits, then the low byte)."""
    info = np.iinfo(dst)
    if math.isnan(x) and info.bits == 64:
        return 2**63
    bits = max(info.bits, 16)
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if info.min < 0 else (0, 2**bits - 1)
    v = 0 if math.isnan(x) else (hi if x >= hi + 1 else lo if x <= lo - 1 else math.trunc(x))
    return min(max(v, lo), hi) % 2**info.bits


def _float_inputs(src: str) -> np.ndarray:
    if src == "float32":
        base = NPZ["cast_in_float32"]
    elif src == "float16":
        base = NPZ["cast_in_float16_bits"]
    else:
        base = NPZ["cast_in_bfloat16_bits"].view(np.uint16)
    rng = np.random.default_rng(3)
    extra = np.concatenate([float_edge_values("float32"),
                            (rng.standard_normal(200) * 10.0 ** rng.integers(0, 20, 200))
                            .astype(np.float32)])
    extra = bf16_from_f32(extra) if src == "bfloat16" else extra.astype(src)
    return np.concatenate([base, extra]).astype(np_dtype(src))


@pytest.mark.parametrize("src", ["float32", "float16", "bfloat16"])
def test_float_to_int_saturates_like_cuda(src: str) -> None:
    x = _float_inputs(src)
    n = len(x)
    outs = [np.zeros(n, dtype=d) for d in INTS]
    sig = {"x_ptr": TRITON_PTR[src], **{f"o{i}": TRITON_PTR[d] for i, d in enumerate(INTS)},
           "n": "i32"}
    launch(compile_typed(to_ints_kernel, sig, {"BLOCK": BLOCK}), (triton.cdiv(n, BLOCK),),
           x, *outs, n)
    values = as_float(x, src)
    n_cuda = len(NPZ["cast_in_float32"])
    for dst, got in zip(INTS, outs, strict=True):
        want = np.array([float_to_int_model(float(v), dst) for v in values],
                        dtype=f"uint{np.iinfo(dst).bits}").view(dst)
        assert_same_bits(got, want, dst, f"{src}->{dst} model")
        assert_same_bits(got[:n_cuda], NPZ[f"cast_{src}_to_{dst}"], dst, f"{src}->{dst} cuda")


def test_downcast_rounding_like_cuda() -> None:
    x = np.concatenate([NPZ["cast_in_float32"], NPZ["round_in_float32"],
                        np.array([65519.0, 65520.0, 6.1e-5, 5.96e-8, 2.98e-8, -2.99e-8, 1e-40,
                                  3.3e38], np.float32)])
    n = len(x)
    outs = [np.zeros(n, np.float16), np.zeros(n, np.float16), np.zeros(n, np.uint16),
            np.zeros(n, np.uint16)]
    sig = {"x_ptr": "*fp32", "h_ne": "*fp16", "h_z": "*fp16", "b_ne": "*bf16", "b_z": "*bf16",
           "n": "i32"}
    launch(compile_typed(downcast_kernel, sig, {"BLOCK": BLOCK}), (triton.cdiv(n, BLOCK),),
           x, *outs, n)
    n0, n1 = len(NPZ["cast_in_float32"]), len(NPZ["round_in_float32"])
    for got, key, dt in zip(outs, ("float16_rtne", "float16_rtz", "bfloat16_rtne",
                                   "bfloat16_rtz"), ("float16", "float16", "bfloat16",
                                                     "bfloat16"), strict=True):
        want_cast = NPZ[f"cast_float32_to_{key}"]
        want_round = NPZ[f"round_float32_to_{key}"]
        if dt == "bfloat16":
            want_cast, want_round = want_cast.view(np.uint16), want_round.view(np.uint16)
        assert_same_bits(got[:n0], want_cast, dt, f"cuda {key} specials")
        assert_same_bits(got[n0:n0 + n1], want_round, dt, f"cuda {key} random")
        assert_same_bits(got, _downcast_model(x, key), dt, f"model {key}")


def _downcast_model(x: np.ndarray, key: str) -> np.ndarray:
    if key == "float16_rtne":
        return x.astype(np.float16)
    if key == "bfloat16_rtne":
        return bf16_from_f32(x)
    if key == "bfloat16_rtz":  # truncate the low 16 bits; NaN stays NaN
        t = (x.view(np.uint32) >> 16).astype(np.uint16)
        return np.where(np.isnan(x), np.uint16(0x7FC0), t)
    out = x.astype(np.float16)  # rtz: the f16 neighbour of x toward zero
    away = np.abs(out.astype(np.float64)) > np.abs(x.astype(np.float64))
    return np.where(away, np.nextafter(out, np.float16(0)), out)


def int_to_float_model(v: int, mant: int, emin: int, emax: int) -> float:
    """Correct rounding (nearest even) of an integer to a float with `mant` bits."""
    if v == 0:
        return 0.0
    a = abs(v)
    e = a.bit_length() - 1
    shift = max(e - (mant - 1), 0)
    q, r = divmod(a, 1 << shift)
    half = 1 << shift >> 1
    if shift and (r > half or (r == half and q & 1)):
        q += 1
    val = float(q) * 2.0**shift if q * 2**shift < 2 ** (emax + 1) else math.inf
    return math.copysign(val, v)


@pytest.mark.parametrize("src", ["int32", "uint32", "int64", "uint64"])
def test_int_to_float_rounds_once(src: str) -> None:
    x = int_edge_values(src)
    rng = np.random.default_rng(4)
    info = np.iinfo(src)
    key = {"int64": "i64_in", "uint64": "u64_in"}.get(src)
    extra = EXTRA[f"tobf16_{src}_in"].view(src)  # NVIDIA's int → bf16 points first
    parts = [extra] + ([NPZ[key]] if key else [])
    # Midpoints for bf16 once rounded to f32 first: one rounding must not become two.
    top = info.bits - 2 if info.min < 0 else info.bits - 1
    parts.append(np.array([2**top + 2**(top - 8) + 1, 2**top + 2**(top - 8) - 1,
                           2**(top - 2) + 2**(top - 10) + 1], dtype=src))
    if info.min < 0:
        parts.append(-parts[-1])
    parts += [x, rng.integers(info.min, info.max, 300, dtype=src, endpoint=True),
              (rng.integers(1, 2**20, 300) * (1 << rng.integers(0, info.bits - 21, 300)))
              .astype(src)]
    x = np.concatenate(parts).astype(src)
    n = len(x)
    f32, f16, bf16 = np.zeros(n, np.float32), np.zeros(n, np.float16), np.zeros(n, np.uint16)
    sig = {"x_ptr": TRITON_PTR[src], "f32_ptr": "*fp32", "f16_ptr": "*fp16",
           "bf16_ptr": "*bf16", "n": "i32"}
    launch(compile_typed(to_floats_kernel, sig, {"BLOCK": BLOCK}), (triton.cdiv(n, BLOCK),),
           x, f32, f16, bf16, n)
    ints = [int(v) for v in x]
    assert_same_bits(f32, np.array([int_to_float_model(v, 24, -126, 127) for v in ints],
                                   np.float32), "float32", f"{src}->f32")
    assert_same_bits(f16, np.array([int_to_float_model(v, 11, -14, 15) for v in ints],
                                   np.float64).astype(np.float16), "float16", f"{src}->f16")
    want_bf = bf16_from_f32(np.array([int_to_float_model(v, 8, -126, 127) for v in ints],
                                     np.float32))
    assert_same_bits(bf16, want_bf, "bfloat16", f"{src}->bf16")
    ne = len(extra)
    assert_same_bits(bf16[:ne], EXTRA[f"tobf16_{src}"].view(np.uint16), "bfloat16", "cuda")
    if key:
        name = "cast_int64_to_float32" if src == "int64" else "cast_uint64_to_float32"
        assert_same_bits(f32[ne:ne + len(NPZ[key])], NPZ[name], "float32", "cuda")
