"""Hypothesis fuzzer: random reduce and scan kernels (dtype, combine, shape, axis, num_warps,
masks). Every case must equal the numpy reference or raise MetalNonRecoverableError; a
silent mismatch fails.

CI runs a small derandomized budget; set MSLTRANS_FUZZ_EXAMPLES=N (or run `-m slow`, which
uses 300) for a large one.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
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
                OP: tl.constexpr, SCAN: tl.constexpr, REV: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    mask = (rm[:, None] < m) & (rn[None, :] < n)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0)
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
            r = tl.sum(x, axis=AXIS)
        elif OP == "max":
            r = tl.max(x, axis=AXIS)
        elif OP == "min":
            r = tl.min(x, axis=AXIS)
        elif OP == "prod":
            r = tl.reduce(x, AXIS, mul)
        elif OP == "and":
            r = tl.reduce(x, AXIS, bit_and)
        elif OP == "or":
            r = tl.reduce(x, AXIS, bit_or)
        elif OP == "xor":
            r = tl.xor_sum(x, axis=AXIS)
        elif OP == "argmax":
            r = tl.argmax(x, axis=AXIS)
        else:
            r = tl.argmin(x, axis=AXIS)
        if AXIS == 0:
            tl.store(out_ptr + rn, r, mask=rn < n)
        else:
            tl.store(out_ptr + rm, r, mask=rm < m)


INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32"]
REDUCE_INT = ["sum", "max", "min", "prod", "and", "or", "xor", "argmax", "argmin"]
REDUCE_FLOAT = ["sum", "max", "min", "argmax", "argmin"]
SCAN_OPS = ["sum", "prod", "max"]


def _out_dtype(dt: np.dtype, op: str, scan: bool) -> np.dtype:
    if op in ("argmax", "argmin"):
        return np.dtype(np.int32)
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
            "num_warps": draw(st.sampled_from([1, 2, 4, 8, 16])), "seed": draw(st.integers(0, 99))}


def _inputs(c: dict) -> np.ndarray:
    M, N, dt = c["M"], c["N"], np.dtype(c["dtype"])
    if dt.kind == "f" and (c["op"] in ("sum", "argmax", "argmin") or c["scan"]):
        rng = np.random.default_rng(c["seed"])
        x = (rng.integers(-8, 8, M * N) * (1.0 if c["op"] != "sum" else 0.37)).astype(dt)
        x[x == 0] = 0.0  # no -0.0: numpy's argmax / accumulate differ from IR on signed zero
    else:
        x = mixed_values(c["dtype"], M * N, seed=c["seed"])
        np.random.default_rng(c["seed"]).shuffle(x)
    return x.reshape(M, N)


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
    x = _inputs(c)
    M, N, m, n, axis = c["M"], c["N"], c["m"], c["n"], c["axis"]
    out_dt = _out_dtype(x.dtype, c["op"], c["scan"])
    out = np.zeros((M, N) if c["scan"] else (N if axis == 0 else M), out_dt)
    try:
        run_kernel(fuzz_kernel, (1,), x, out, m, n, num_warps=c["num_warps"], M=M, N=N,
                   AXIS=axis, OP=c["op"], SCAN=c["scan"], REV=c["rev"])
    except MetalNonRecoverableError:
        return "refused"
    xp = np.zeros_like(x)
    xp[:m, :n] = x[:m, :n]
    if c["scan"]:
        got = out[:m, :n]
        if x.dtype.kind == "f" and c["op"] == "sum":
            # Padding is zero, so the stored [:m, :n] part is the scan of x[:m, :n] alone.
            assert_sum_close(got, xp[:m, :n].astype(out_dt), axis, scan=True, reverse=c["rev"])
            return "ok"
        ref = _reference(c, xp, out_dt)[:m, :n]
    else:
        keep = n if axis == 0 else m
        got, ref = out[:keep], np.asarray(_reference(c, xp, out_dt))[:keep]
        if x.dtype.kind == "f" and c["op"] == "sum":
            src = xp[:, :n] if axis == 0 else xp[:m, :]
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


@settings(max_examples=EXAMPLES, **_COMMON)
@given(cases())
def test_fuzz_reduce_scan(case: dict) -> None:
    _log(case, check_case(case))


@pytest.mark.slow
@settings(max_examples=max(EXAMPLES, 300), **_COMMON)
@given(cases())
def test_fuzz_reduce_scan_large(case: dict) -> None:
    _log(case, check_case(case))
