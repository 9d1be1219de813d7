"""Differential suite, integers: / % << >> min max - abs over every width and signedness,
against Python-int references written to the IR's semantics plus NVIDIA's measured results
for the poison cases (tests/data/cuda/elementwise_semantics.npz, docs/semantics.md).

One launch per dtype computes all ops (outputs stacked [op, n]) over the CUDA reference
inputs, every pair of edge values and seeded random values; n is not a multiple of BLOCK.
"""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from tests.support.diff import TRITON_PTR, assert_same_bits, compile_typed, cuda_reference, launch
from tests.support.values import edge_values

NPZ = cuda_reference("elementwise_semantics")
EXTRA = cuda_reference("elementwise_semantics_extra")  # scripts/cuda_reference/*_extra.py
DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
OPS = ("div", "rem", "shl", "shr", "min", "max", "neg", "abs")
BLOCK = 256


@triton.jit
def int_ops_kernel(a_ptr, b_ptr, s_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    s = tl.load(s_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, a // b, mask=m)
    tl.store(out_ptr + 1 * n + offs, a % b, mask=m)
    tl.store(out_ptr + 2 * n + offs, a << s, mask=m)
    tl.store(out_ptr + 3 * n + offs, a >> s, mask=m)
    tl.store(out_ptr + 4 * n + offs, tl.minimum(a, b), mask=m)
    tl.store(out_ptr + 5 * n + offs, tl.maximum(a, b), mask=m)
    tl.store(out_ptr + 6 * n + offs, -a, mask=m)
    tl.store(out_ptr + 7 * n + offs, tl.abs(a), mask=m)


def _wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def reference(op: str, a: int, b: int, s: int, dtype: str) -> int:
    """One element, in Python ints, as docs/semantics.md says."""
    info = np.iinfo(dtype)
    bits, signed = info.bits, info.min < 0
    if op in ("div", "rem"):
        if b == 0:  # all ones; 64-bit: 32-bit all ones when the dividend's high word is 0
            if bits == 64 and (a % 2**64) >> 32 == 0:
                return 2**32 - 1
            return -1 if signed else info.max
        if signed and a == info.min and b == -1:
            return info.min if op == "div" else 0
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C: toward zero
        return q if op == "div" else a - q * b
    if op in ("shl", "shr"):
        amount = s % 2 ** min(bits, 32)  # unsigned; 64-bit shifts read its low word only
        if op == "shl":
            return 0 if amount >= bits else _wrap(a << amount, bits, signed)
        if amount >= bits:
            return -1 if a < 0 else 0
        return a >> amount  # Python >> is arithmetic, as shrsi; unsigned a is >= 0
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    if op == "neg":
        return _wrap(-a, bits, signed)
    return _wrap(abs(a), bits, signed)  # abs(INT_MIN) wraps


def _inputs(dtype: str, n_random: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    parts_a, parts_b, parts_s = [], [], []
    if f"divrem_{dtype}_a" in NPZ:  # the CUDA reference points first
        a, b = NPZ[f"divrem_{dtype}_a"], NPZ[f"divrem_{dtype}_b"]
        parts_a.append(a), parts_b.append(b), parts_s.append(np.zeros_like(a))
        a, s = NPZ[f"shift_{dtype}_a"], NPZ[f"shift_{dtype}_b"]
        parts_a.append(a), parts_b.append(np.ones_like(a)), parts_s.append(s)
    e = edge_values(dtype)
    ea, eb = (x.ravel() for x in np.meshgrid(e, e))
    parts_a.append(ea), parts_b.append(eb)
    amounts = np.arange(len(ea)) % (info.bits + 3)  # mostly in range, some past the width
    parts_s.append(amounts.astype(dtype))
    rng = np.random.default_rng(1)
    r = rng.integers(info.min, info.max, size=(3, n_random), dtype=dtype, endpoint=True)
    small = rng.integers(0 if info.min == 0 else -9, 9, size=n_random).astype(dtype)
    every = np.arange(n_random)
    parts_a.append(r[0]), parts_b.append(np.where(every % 2 == 0, r[1], small))
    parts_s.append(np.where(every % 3 == 0, r[2], np.abs(small).astype(dtype)))
    for _, a, b in _extra_tail(dtype):  # more CUDA points, last
        parts_a.append(a), parts_b.append(b), parts_s.append(np.zeros_like(a))
    return (np.concatenate(parts_a).astype(dtype), np.concatenate(parts_b).astype(dtype),
            np.concatenate(parts_s).astype(dtype))


def _extra_tail(dtype: str) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(what, a, b) segments of recorded CUDA points appended after the other inputs."""
    tail = []
    if f"abs_{dtype}" in EXTRA:
        info = np.iinfo(dtype)
        a = np.array([info.min, -1, 0, info.max], dtype)
        tail.append(("abs", a, np.ones_like(a)))
    if f"divzero_{dtype}_a" in EXTRA:
        a = EXTRA[f"divzero_{dtype}_a"]
        tail.append(("divzero", a, np.zeros_like(a)))
    return tail


def _run(dtype: str, n_random: int) -> tuple[np.ndarray, ...]:
    a, b, s = _inputs(dtype, n_random)
    n = len(a)
    out = np.zeros(len(OPS) * n, dtype=dtype)
    ptr = TRITON_PTR[dtype]
    sig = {"a_ptr": ptr, "b_ptr": ptr, "s_ptr": ptr, "out_ptr": ptr, "n": "i32"}
    program = compile_typed(int_ops_kernel, sig, {"BLOCK": BLOCK})
    launch(program, (triton.cdiv(n, BLOCK),), a, b, s, out, n)
    return a, b, s, out.reshape(len(OPS), n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_int_ops_against_semantics(dtype: str) -> None:
    check(dtype, 301)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_int_ops_random_sweep(dtype: str) -> None:
    check(dtype, 30_000)


def check(dtype: str, n_random: int) -> None:
    a, b, s, got = _run(dtype, n_random)
    for k, op in enumerate(OPS):
        want = np.array([reference(op, int(x), int(y), int(z), dtype)
                         for x, y, z in zip(a, b, s, strict=True)], dtype=object)
        want = np.array([int(v) % 2**np.iinfo(dtype).bits for v in want],
                        dtype=f"uint{np.iinfo(dtype).bits}").view(dtype)
        assert_same_bits(got[k], want, dtype, f"{op} {dtype}")
    if f"div_{dtype}" in NPZ:  # and the raw CUDA outputs, element for element
        nd, ns = len(NPZ[f"divrem_{dtype}_a"]), len(NPZ[f"shift_{dtype}_a"])
        for k, op in enumerate(("div", "rem")):
            assert_same_bits(got[k][:nd], NPZ[f"{op}_{dtype}"], dtype, f"cuda {op}")
        for k, op in ((2, "shl"), (3, "shr")):
            assert_same_bits(got[k][nd:nd + ns], NPZ[f"{op}_{dtype}"], dtype, f"cuda {op}")
    tail = _extra_tail(dtype)
    start = len(a) - sum(len(seg) for _, seg, _ in tail)
    for what, seg, _ in tail:
        end = start + len(seg)
        if what == "abs":
            assert_same_bits(got[7][start:end], EXTRA[f"abs_{dtype}"], dtype, "cuda abs")
        else:
            for k, op in ((0, "div"), (1, "rem")):
                want = EXTRA[f"divzero_{op}_{dtype}"].view(dtype)
                assert_same_bits(got[k][start:end], want, dtype, f"cuda {op} by 0")
        start = end


@triton.jit
def scalar_divisor_kernel(x_ptr, out_ptr, d, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x // d, mask=m)
    tl.store(out_ptr + n + offs, x % d, mask=m)
    tl.store(out_ptr + 2 * n + offs, x >> d, mask=m)


@pytest.mark.parametrize(("dtype", "d"), [("int32", 0), ("int32", -1), ("int32", 1),
                                          ("int64", 2**40 + 3), ("int64", 0)])
def test_scalar_operand(dtype: str, d: int) -> None:
    # A kernel argument equal to 1 is specialized away by Triton's launcher (a constexpr),
    # so that case goes through the constant path; the others through a scalar register.
    x = edge_values(dtype)
    n = len(x)
    out = np.zeros(3 * n, dtype)
    sig = {"x_ptr": TRITON_PTR[dtype], "out_ptr": TRITON_PTR[dtype], "n": "i32",
           "d": "constexpr" if d == 1 else ("i32" if dtype == "int32" else "i64")}
    consts = {"BLOCK": 64, **({"d": 1} if d == 1 else {})}
    program = compile_typed(scalar_divisor_kernel, sig, consts)
    args = (x, out, n) if d == 1 else (x, out, d, n)
    launch(program, (triton.cdiv(n, 64),), *args)
    bits = np.iinfo(dtype).bits
    for k, op in enumerate(("div", "rem", "shr")):
        want = np.array([reference(op, int(v), d, d, dtype) % 2**bits for v in x],
                        dtype=f"uint{bits}").view(dtype)
        assert_same_bits(out[k * n:(k + 1) * n], want, dtype, f"{op} by {d}")


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_odd_shift_amounts_like_cuda(dtype: str) -> None:
    # Negative amounts, INT_MIN, and for i64 amounts >= 2**32 (only the low word counts).
    a, s = EXTRA[f"shift2_{dtype}_a"], EXTRA[f"shift2_{dtype}_b"]
    n = len(a)
    out = np.zeros(len(OPS) * n, dtype=dtype)
    ptr = TRITON_PTR[dtype]
    sig = {"a_ptr": ptr, "b_ptr": ptr, "s_ptr": ptr, "out_ptr": ptr, "n": "i32"}
    launch(compile_typed(int_ops_kernel, sig, {"BLOCK": BLOCK}), (1,), a, np.ones_like(a), s,
           out, n)
    got = out.reshape(len(OPS), n)
    for k, op in ((2, "shl"), (3, "shr")):
        assert_same_bits(got[k], EXTRA[f"{op}2_{dtype}"], dtype, f"cuda {op}")
        want = np.array([reference(op, int(x), 1, int(z), dtype)
                         for x, z in zip(a, s, strict=True)], dtype=dtype)
        assert_same_bits(got[k], want, dtype, f"model {op}")
