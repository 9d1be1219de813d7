"""Differential suite, the math/arith ops Triton's `tl.*` front end does not emit but its
passes or `tl.extra` paths can (math.tan, tanh, ..., roundeven, copysign, ctlz/cttz/ctpop,
tt.mulhiui): one hand-written TTGIR kernel per op, masked, odd n, against numpy.
Transcendental bounds are measured on the simulator; see docs/semantics.md.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.diff import assert_same_bits, ulp_error
from tests.support.run_kernel import compile_ttgir, dispatch
from tests.support.ttgir_gen import elementwise_kernel_1d, write
from tests.support.values import float_edge_values, int_edge_values

BLOCK, WARPS = 128, 2
N = 1001

# op → (reference on float64, max ULP error): the bounds are the errors measured on the
# simulator over 3 * 10**5 inputs (rounded up), as docs/semantics.md states them.
TRANSCENDENTAL = {
    "math.tan": (np.tan, 1.0), "math.tanh": (np.tanh, 2.5), "math.sinh": (np.sinh, 2.0),
    "math.cosh": (np.cosh, 1.5), "math.asin": (np.arcsin, 1.0),
    "math.acos": (np.arccos, 1.0), "math.atan": (np.arctan, 1.0),
    "math.asinh": (np.arcsinh, 2.0), "math.acosh": (np.arccosh, 2.0),
    "math.atanh": (np.arctanh, 2.0), "math.cbrt": (np.cbrt, 1.0),
    "math.log10": (np.log10, 2.0),
}
BINARY = {"math.atan2": (np.arctan2, 1.5), "math.powf": (np.power, 1.0)}


def _round_half_away(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)  # x - t is exact


EXACT_FLOAT = {"math.trunc": np.trunc, "math.round": _round_half_away,
               "math.roundeven": np.rint, "math.absf": np.abs, "math.floor": np.floor,
               "math.ceil": np.ceil}


def _t(elem: str) -> str:
    return f"tensor<{BLOCK}x{elem}, #L>"


def _run(tmp: Path, in_types: list[str], out_type: str, body: str,
         inputs: list[np.ndarray], out_dtype: type) -> np.ndarray:
    program = compile_ttgir(write(tmp, "op", elementwise_kernel_1d(BLOCK, WARPS, in_types,
                                                                   out_type, body)))
    out = np.zeros(len(inputs[0]), dtype=out_dtype)
    dispatch(program, ((len(out) + BLOCK - 1) // BLOCK,), (*inputs, out, len(out)))
    return out


def _floats(seed: int, scale: float = 3.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    edges = float_edge_values("float32")
    r = (rng.standard_normal(N - len(edges)) * scale).astype(np.float32)
    return np.concatenate([edges, r])


def _check_ulp(op: str, got: np.ndarray, ref: np.ndarray, bound: float) -> None:
    ref32 = ref.astype(np.float32)
    special = ~np.isfinite(ref32) | (ref32 == 0)
    assert_same_bits(got[special], ref32[special], "float32", f"{op} specials")
    err = ulp_error(got[~special], ref[~special])
    assert err.max() <= bound, f"{op}: {err.max():.3f} ulp > {bound}"


@pytest.mark.parametrize("op", list(TRANSCENDENTAL))
def test_unary_transcendental(tmp_path: Path, op: str) -> None:
    fn, bound = TRANSCENDENTAL[op]
    x = _floats(11, 0.6 if op in ("math.asin", "math.acos", "math.atanh") else 3.0)
    if op == "math.acosh":
        x = np.abs(x) + np.float32(1)
    got = _run(tmp_path, ["f32"], "f32", f"%res = {op} %x0 : {_t('f32')}", [x], np.float32)
    with np.errstate(all="ignore"):
        _check_ulp(op, got, fn(x.astype(np.float64)), bound)


@pytest.mark.parametrize("op", list(BINARY))
def test_binary_transcendental(tmp_path: Path, op: str) -> None:
    fn, bound = BINARY[op]
    x, y = _floats(12), _floats(13, 2.0)
    if op == "math.powf":
        x = np.abs(x)
    got = _run(tmp_path, ["f32", "f32"], "f32", f"%res = {op} %x0, %x1 : {_t('f32')}",
               [x, y], np.float32)
    with np.errstate(all="ignore"):
        _check_ulp(op, got, fn(x.astype(np.float64), y.astype(np.float64)), bound)


@pytest.mark.parametrize("elem", ["f32", "f16"])
@pytest.mark.parametrize("op", [*EXACT_FLOAT, "math.copysign"])
def test_exact_float(tmp_path: Path, op: str, elem: str) -> None:
    dt = np.float32 if elem == "f32" else np.float16
    x = np.concatenate([_floats(14, 40.0), np.array([0.5, -0.5, 1.5, 2.5, -2.5], np.float32)])
    x = x.astype(dt)
    y = -np.roll(x, 3)
    operands = "%x0, %x1" if op == "math.copysign" else "%x0"
    got = _run(tmp_path, [elem, elem], elem, f"%res = {op} {operands} : {_t(elem)}", [x, y], dt)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        want = np.copysign(x64, y) if op == "math.copysign" else EXACT_FLOAT[op](x64)
    assert_same_bits(got, want.astype(dt), "float32" if elem == "f32" else "float16", op)


@pytest.mark.parametrize("elem", ["i8", "i16", "i32", "i64"])
def test_bit_counts(tmp_path: Path, elem: str) -> None:
    dt = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}[elem]
    bits = np.iinfo(dt).bits
    rng = np.random.default_rng(15)
    x = np.concatenate([int_edge_values(dt.__name__), rng.integers(
        np.iinfo(dt).min, np.iinfo(dt).max, 300, dtype=dt, endpoint=True)]).astype(dt)
    u = [int(v) % 2**bits for v in x]
    for op, ref in (("math.ctlz", lambda v: bits - v.bit_length()),
                    ("math.cttz", lambda v: bits if v == 0 else (v & -v).bit_length() - 1),
                    ("math.ctpop", lambda v: bin(v).count("1"))):
        got = _run(tmp_path, [elem], elem, f"%res = {op} %x0 : {_t(elem)}", [x], dt)
        np.testing.assert_array_equal(got, np.array([ref(v) for v in u], dt), err_msg=op)


@pytest.mark.parametrize("elem", ["i32", "i64"])
def test_mulhiui(tmp_path: Path, elem: str) -> None:
    dt = np.int32 if elem == "i32" else np.int64
    bits = np.iinfo(dt).bits
    rng = np.random.default_rng(16)
    e = int_edge_values(dt.__name__)
    a, b = (v.ravel() for v in np.meshgrid(e, e))
    a = np.concatenate([a, rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, 200, dtype=dt)])
    b = np.concatenate([b, rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, 200, dtype=dt)])
    got = _run(tmp_path, [elem, elem], elem, f"%res = tt.mulhiui %x0, %x1 : {_t(elem)}",
               [a.astype(dt), b.astype(dt)], dt)
    want = [((int(x) % 2**bits) * (int(y) % 2**bits)) >> bits for x, y in zip(a, b, strict=True)]
    want = np.array(want, dtype=f"uint{bits}").view(dt)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("op", "fn"), [("math.isnan", np.isnan), ("math.isinf", np.isinf),
                                        ("math.isfinite", np.isfinite)])
def test_fp_classes(tmp_path: Path, op: str, fn) -> None:  # noqa: ANN001
    x = _floats(17)
    body = f"""%b = {op} %x0 : {_t('f32')}
               %res = arith.extui %b : {_t('i1')} to {_t('i8')}"""
    got = _run(tmp_path, ["f32"], "i8", body, [x], np.int8)
    np.testing.assert_array_equal(got, fn(x).astype(np.int8), err_msg=op)
