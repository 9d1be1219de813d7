"""Hypothesis fuzzer: random reduce and scan kernels (dtype incl. bf16, combine, shape, axis,
keep_dims, num_warps, masks). Every case must equal the numpy reference or raise
MetalNonRecoverableError; a silent mismatch fails. Refusing is not a way to pass: a run in
which more than MAX_REFUSED of the cases are refused fails too.

CI runs a small derandomized budget; set MSLTRANS_FUZZ_EXAMPLES=N (or run `-m slow`, which
uses 300) for a large one. MSLTRANS_FUZZ_LOG=path appends one line per case (`ok` or
`refused`, then the case).
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msltrans.errors import MetalNonRecoverableError
from tests.support.combine import bit_and, bit_or, maximum, mul
from tests.support.reduce_ref import (
    assert_float_same,
    assert_sum_close,
    float_minmax,
    int_reduce,
    int_scan,
)
from tests.support.run_kernel import run_kernel
from tests.support.values import mixed_values


@triton.jit
def fuzz_kernel(x_ptr, out_ptr, m, n, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                OP: tl.constexpr, SCAN: tl.constexpr, REV: tl.constexpr, KEEP: tl.constexpr,
                BF16: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    mask = (rm[:, None] < m) & (rn[None, :] < n)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if BF16:  # bf16 travels as its uint16 bits (numpy has no bfloat16)
        x = x.to(tl.bfloat16, bitcast=True)
    if SCAN:
        if OP == "sum":
            r = tl.cumsum(x, AXIS, reverse=REV)
        elif OP == "prod":
            r = tl.associative_scan(x, AXIS, mul, reverse=REV)
        else:
            r = tl.associative_scan(x, AXIS, maximum, reverse=REV)
        tl.store(out_ptr + offs, r, mask=mask)
    else:
        if OP == "sum":
            r = tl.sum(x, axis=AXIS, keep_dims=KEEP)
        elif OP == "max":
            r = tl.max(x, axis=AXIS, keep_dims=KEEP)
        elif OP == "min":
            r = tl.min(x, axis=AXIS, keep_dims=KEEP)
        elif OP == "prod":
            r = tl.reduce(x, AXIS, mul, keep_dims=KEEP)
        elif OP == "and":
            r = tl.reduce(x, AXIS, bit_and, keep_dims=KEEP)
        elif OP == "or":
            r = tl.reduce(x, AXIS, bit_or, keep_dims=KEEP)
        elif OP == "xor":
            r = tl.xor_sum(x, axis=AXIS, keep_dims=KEEP)
        elif OP == "argmax":
            r = tl.argmax(x, axis=AXIS, keep_dims=KEEP)
        else:
            r = tl.argmin(x, axis=AXIS, keep_dims=KEEP)
        if KEEP:  # [1, N] or [M, 1]
            if AXIS == 0:
                tl.store(out_ptr + rn[None, :], r, mask=rn[None, :] < n)
            else:
                tl.store(out_ptr + rm[:, None], r, mask=rm[:, None] < m)
        elif AXIS == 0:
            tl.store(out_ptr + rn, r, mask=rn < n)
        else:
            tl.store(out_ptr + rm, r, mask=rm < m)


INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "bfloat16", "float32"]
REDUCE_INT = ["sum", "max", "min", "prod", "and", "or", "xor", "argmax", "argmin"]
REDUCE_FLOAT = ["sum", "max", "min", "argmax", "argmin"]
SCAN_OPS = ["sum", "prod", "max"]


# More refusals than this (a fraction of the cases run) fail the run: a lowering that refused
# everything would otherwise pass. The generated kernels are all supported today (0 refused).
MAX_REFUSED = 0.10


def _out_dtype(dtype: str, op: str, scan: bool) -> np.dtype:
    if op in ("argmax", "argmin"):
        return np.dtype(np.int32)
    if dtype == "bfloat16":
        return np.dtype(np.float32)  # bf16 results are stored (exactly) as f32
    dt = np.dtype(dtype)
    if dt.itemsize >= 4 or op not in ("sum", "max", "min") or (scan and op != "sum"):
        return dt
    if dt.kind == "f":
        return np.dtype(np.float32) if op != "sum" else dt
    if op == "sum":
        return np.dtype(np.int32 if dt.kind == "i" else np.uint32)
    return np.dtype(np.int32)


@st.composite
def cases(draw: st.DrawFn) -> dict:
    dtype = draw(st.sampled_from(INTS + FLOATS))
    scan = draw(st.booleans())
    is_float = dtype in FLOATS
    ops = SCAN_OPS if scan else (REDUCE_FLOAT if is_float else REDUCE_INT)
    if scan and is_float:
        ops = ["sum", "max"]
    op = draw(st.sampled_from(ops))
    lm = draw(st.integers(0, 6))
    ln = draw(st.integers(0, 12 - lm))
    M, N = 1 << lm, 1 << ln
    return {"dtype": dtype, "scan": scan, "op": op, "M": M, "N": N,
            "m": draw(st.integers(1, M)), "n": draw(st.integers(1, N)),
            "axis": draw(st.sampled_from([0, 1])), "rev": draw(st.booleans()),
            "keep": draw(st.booleans()),  # keep_dims (reductions; scans ignore it)
            "num_warps": draw(st.sampled_from([1, 2, 4, 8, 16])), "seed": draw(st.integers(0, 99))}


def _to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (round to nearest even), as uint16 bits."""
    return torch.from_numpy(np.ascontiguousarray(x, np.float32)).to(torch.bfloat16).view(
        torch.int16).numpy().view(np.uint16)


def _from_bf16_bits(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _inputs(c: dict) -> tuple[np.ndarray, np.ndarray]:
    """(what the kernel loads, the values the reference sees): the same array except for
    bf16, which the kernel loads as uint16 bits and the reference sees as float32."""
    M, N = c["M"], c["N"]
    bf16 = c["dtype"] == "bfloat16"
    dt = np.dtype(np.float32 if bf16 else c["dtype"])
    if bf16 and c["op"] == "sum":
        # Small integers, each line along the axis with sum |x| <= 255: every partial sum, in
        # any order, is an integer bf16 holds exactly, so bf16 sums compare bit for bit.
        x = np.random.default_rng(c["seed"]).integers(-3, 4, (M, N)).astype(np.float32)
        x[np.cumsum(np.abs(x), axis=c["axis"]) > 255] = 0.0
    elif dt.kind == "f" and (c["op"] in ("sum", "argmax", "argmin") or c["scan"]):
        rng = np.random.default_rng(c["seed"])
        x = (rng.integers(-8, 8, M * N) * (1.0 if c["op"] != "sum" else 0.37)).astype(dt)
        x[x == 0] = 0.0  # no -0.0: numpy's argmax / accumulate differ from IR on signed zero
    else:
        x = mixed_values(dt.name, M * N, seed=c["seed"])
        np.random.default_rng(c["seed"]).shuffle(x)
    x = x.reshape(M, N)
    if bf16:
        bits = _to_bf16_bits(x)
        return bits, _from_bf16_bits(bits)
    return x, x


def _reference(c: dict, xp: np.ndarray, out_dt: np.dtype) -> np.ndarray:
    op, axis = c["op"], c["axis"]
    if c["scan"]:
        if op == "max":
            fn = np.fmax if xp.dtype.kind == "f" else np.maximum
            src = np.flip(xp, axis) if c["rev"] else xp
            r = fn.accumulate(src, axis=axis)
            return np.flip(r, axis) if c["rev"] else r
        return int_scan(xp.astype(out_dt), op, axis, c["rev"])
    if op == "argmax":
        return xp.argmax(axis=axis)
    if op == "argmin":
        return xp.argmin(axis=axis)
    if xp.dtype.kind == "f":
        return float_minmax(xp.astype(out_dt), op, axis, False)
    src = xp.astype(out_dt) if op in ("max", "min") else xp
    return int_reduce(src, op, axis, out_dt)


def check_case(c: dict) -> str:
    xk, x = _inputs(c)
    M, N, m, n, axis = c["M"], c["N"], c["m"], c["n"], c["axis"]
    bf16 = c["dtype"] == "bfloat16"
    out_dt = _out_dtype(c["dtype"], c["op"], c["scan"])
    out = np.zeros((M, N) if c["scan"] else (N if axis == 0 else M), out_dt)
    try:
        run_kernel(fuzz_kernel, (1,), xk, out, m, n, num_warps=c["num_warps"], M=M, N=N,
                   AXIS=axis, OP=c["op"], SCAN=c["scan"], REV=c["rev"], KEEP=c["keep"],
                   BF16=bf16)
    except MetalNonRecoverableError:
        return "refused"
    xp = np.zeros_like(x)
    xp[:m, :n] = x[:m, :n]
    if c["scan"]:
        got = out[:m, :n]
        if x.dtype.kind == "f" and c["op"] == "sum":
            # Padding is zero, so the stored [:m, :n] part is the scan of x[:m, :n] alone.
            if bf16:  # exact (see _inputs)
                src = np.flip(xp[:m, :n], axis) if c["rev"] else xp[:m, :n]
                ref = np.cumsum(src.astype(np.float64), axis=axis)
                ref = np.flip(ref, axis) if c["rev"] else ref
                assert_float_same(got, ref.astype(np.float32))
            else:
                assert_sum_close(got, xp[:m, :n].astype(out_dt), axis, scan=True,
                                 reverse=c["rev"])
            return "ok"
        ref = _reference(c, xp, out_dt)[:m, :n]
    else:
        keep = n if axis == 0 else m
        got, ref = out[:keep], np.asarray(_reference(c, xp, out_dt))[:keep]
        if x.dtype.kind == "f" and c["op"] == "sum":
            src = xp[:, :n] if axis == 0 else xp[:m, :]
            if bf16:  # exact (see _inputs)
                assert_float_same(got, src.astype(np.float64).sum(axis=axis).astype(np.float32))
            else:
                assert_sum_close(got, src.astype(out_dt), axis)
            return "ok"
    if got.dtype.kind == "f":
        assert_float_same(got, ref.astype(got.dtype))
    else:
        np.testing.assert_array_equal(got, ref.astype(got.dtype), err_msg=str(c))
    return "ok"


def _log(case: dict, outcome: str) -> None:
    """MSLTRANS_FUZZ_LOG=path appends one line per case (to count ok / refused)."""
    path = os.environ.get("MSLTRANS_FUZZ_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{outcome} {case}\n")


EXAMPLES = int(os.environ.get("MSLTRANS_FUZZ_EXAMPLES", "30"))
_COMMON = {"deadline": None, "derandomize": True, "database": None,
           "suppress_health_check": [HealthCheck.too_slow]}


def fuzz(examples: int) -> Counter:
    """Run `examples` generated cases; fail on a mismatch, or when too many are refused."""
    counts: Counter = Counter()

    @settings(max_examples=examples, **_COMMON)
    @given(cases())
    def one(case: dict) -> None:
        outcome = check_case(case)
        counts[outcome] += 1
        _log(case, outcome)

    one()
    total = sum(counts.values())
    assert total > 0
    assert counts["refused"] <= MAX_REFUSED * total, (
        f"{counts['refused']} of {total} generated cases were refused (at most "
        f"{MAX_REFUSED:.0%} may be); MSLTRANS_FUZZ_LOG=path lists them")
    return counts


def test_fuzz_reduce_scan() -> None:
    fuzz(EXAMPLES)


@pytest.mark.slow
def test_fuzz_reduce_scan_large() -> None:
    fuzz(max(EXAMPLES, 300))


def test_refusals_fail_the_fuzzer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lowering that refused every case cannot pass the fuzzer."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise MetalNonRecoverableError("refused for the test")

    monkeypatch.setitem(globals(), "run_kernel", refuse)
    monkeypatch.delenv("MSLTRANS_FUZZ_LOG", raising=False)
    with pytest.raises(AssertionError, match="were refused"):
        fuzz(3)
