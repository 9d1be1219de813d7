"""Every predicate of arith.cmpi / arith.cmpf and the casts, one op per generated kernel,
against numpy references written to the IR's semantics (bit-exact)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from msltrans.ir import read_ttgir_file
from msltrans.lower import lower_module
from tests.support.diff import apple_nan
from tests.support.fma import fma_f32
from tests.support.run_kernel import compile_ttgir, dispatch
from tests.support.ttgir_gen import elementwise_kernel_1d, write

BLOCK, WARPS = 128, 2


def _run(tmp: Path, in_types: list[str], out_type: str, body: str, inputs: list[np.ndarray],
         out_dtype: type) -> np.ndarray:
    n = len(inputs[0])
    text = elementwise_kernel_1d(BLOCK, WARPS, in_types, out_type, body)
    program = compile_ttgir(write(tmp, "ew", text))
    out = np.zeros(n, dtype=out_dtype)
    dispatch(program, ((n + BLOCK - 1) // BLOCK,), (*inputs, out, n))
    return out


def _t(elem: str) -> str:
    return f"tensor<{BLOCK}x{elem}, #L>"


INT_VALUES = np.array([0, 1, -1, 2, -2, 7, 2**31 - 1, -(2**31), 100, -100, 5, 5],
                      dtype=np.int64)
CMPI = {
    "eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal,
    "sgt": np.greater, "sge": np.greater_equal,
    "ult": "u<", "ule": "u<=", "ugt": "u>", "uge": "u>=",
}


def _int_pairs() -> tuple[np.ndarray, np.ndarray]:
    a, b = np.meshgrid(INT_VALUES, INT_VALUES)
    return a.ravel().astype(np.int32), b.ravel().astype(np.int32)


@pytest.mark.parametrize("pred", list(CMPI))
def test_cmpi(tmp_path: Path, pred: str) -> None:
    a, b = _int_pairs()
    body = f"""%b = arith.cmpi {pred}, %x0, %x1 : {_t('i32')}
               %res = arith.extui %b : {_t('i1')} to {_t('i8')}"""
    got = _run(tmp_path, ["i32", "i32"], "i8", body, [a, b], np.int8)
    ref = CMPI[pred]
    if isinstance(ref, str):
        ua, ub = a.view(np.uint32), b.view(np.uint32)
        want = {"u<": ua < ub, "u<=": ua <= ub, "u>": ua > ub, "u>=": ua >= ub}[ref]
    else:
        want = ref(a, b)
    np.testing.assert_array_equal(got, want.astype(np.int8))


FLOATS = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 3.25, 3.25], np.float32)
CMPF = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult",
        "ule", "une", "uno", "true"]


def _cmpf_ref(pred: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    unordered = np.isnan(a) | np.isnan(b)
    with np.errstate(invalid="ignore"):
        base = {"eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b,
                "ne": a != b, "rd": np.ones_like(unordered), "no": np.zeros_like(unordered)}
    if pred in ("false", "true"):
        return np.full(a.shape, pred == "true")
    rel = base[pred[1:]]
    return (rel & ~unordered) if pred[0] == "o" else (rel | unordered)


@pytest.mark.parametrize("pred", CMPF)
def test_cmpf(tmp_path: Path, pred: str) -> None:
    a, b = (x.ravel() for x in np.meshgrid(FLOATS, FLOATS))
    body = f"""%b = arith.cmpf {pred}, %x0, %x1 : {_t('f32')}
               %res = arith.extui %b : {_t('i1')} to {_t('i8')}"""
    got = _run(tmp_path, ["f32", "f32"], "i8", body, [a, b], np.int8)
    np.testing.assert_array_equal(got, _cmpf_ref(pred, a, b).astype(np.int8), err_msg=pred)


def _wrap(values: np.ndarray, dtype: type) -> np.ndarray:
    return values.astype(np.int64).astype(dtype)


CASTS = [
    # (op, in elem, out elem, numpy input dtype, numpy output dtype, reference)
    ("arith.extsi", "i8", "i32", np.int8, np.int32, lambda x: x.astype(np.int32)),
    ("arith.extui", "i8", "i32", np.int8, np.int32,
     lambda x: x.view(np.uint8).astype(np.int32)),
    ("arith.trunci", "i32", "i8", np.int32, np.int8, lambda x: x.astype(np.int8)),
    ("arith.extsi", "i32", "i64", np.int32, np.int64, lambda x: x.astype(np.int64)),
    ("arith.extui", "i32", "i64", np.int32, np.int64,
     lambda x: x.view(np.uint32).astype(np.int64)),
    ("arith.trunci", "i64", "i16", np.int64, np.int16, lambda x: x.astype(np.int16)),
    ("arith.sitofp", "i32", "f32", np.int32, np.float32, lambda x: x.astype(np.float32)),
    ("arith.uitofp", "i32", "f32", np.int32, np.float32,
     lambda x: x.view(np.uint32).astype(np.float32)),
    ("arith.extf", "f16", "f32", np.float16, np.float32, lambda x: x.astype(np.float32)),
    ("arith.truncf", "f32", "f16", np.float32, np.float16, lambda x: x.astype(np.float16)),
]


@pytest.mark.parametrize("case", CASTS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_casts(tmp_path: Path, case: tuple) -> None:
    op, src, dst, in_dt, out_dt, ref = case
    rng = np.random.default_rng(0)
    if np.issubdtype(in_dt, np.integer):
        info = np.iinfo(in_dt)
        x = rng.integers(info.min, info.max, 300, dtype=np.int64, endpoint=True).astype(in_dt)
        x[:4] = [0, -1, info.min, info.max]
    else:
        x = (rng.standard_normal(300) * 1000).astype(in_dt)
        x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-7]
    body = f"%res = {op} %x0 : {_t(src)} to {_t(dst)}"
    got = _run(tmp_path, [src], dst, body, [x], out_dt)
    assert got.tobytes() == ref(x).astype(out_dt).tobytes()


@pytest.mark.parametrize("case", [("fptosi", np.int32), ("fptoui", np.uint32)])
def test_float_to_int_in_range(tmp_path: Path, case: tuple) -> None:
    op, want_dt = case
    x = np.array([0.0, 1.9, -1.9 if op == "fptosi" else 2.5, 1e6, 123.5, 2.0**30],
                 dtype=np.float32)
    body = f"%res = arith.{op} %x0 : {_t('f32')} to {_t('i32')}"
    got = _run(tmp_path, ["f32"], "i32", body, [x], np.int32)
    assert got.tobytes() == np.trunc(x).astype(want_dt).tobytes()


@pytest.mark.parametrize(("op", "fn"), [("addi", np.add), ("subi", np.subtract),
                                        ("muli", np.multiply), ("andi", np.bitwise_and),
                                        ("ori", np.bitwise_or), ("xori", np.bitwise_xor)])
def test_integer_binary_wraps(tmp_path: Path, op: str, fn) -> None:  # noqa: ANN001
    a, b = _int_pairs()
    got = _run(tmp_path, ["i32", "i32"], "i32", f"%res = arith.{op} %x0, %x1 : {_t('i32')}",
               [a, b], np.int32)
    want = fn(a.astype(np.int64), b.astype(np.int64)).astype(np.int32)  # wrap-around
    np.testing.assert_array_equal(got, want)


def test_select_and_float_binary(tmp_path: Path) -> None:
    a, b = (x.ravel() for x in np.meshgrid(FLOATS, FLOATS))
    body = f"""%sum = arith.addf %x0, %x1 : {_t('f32')}
               %d = arith.divf %x0, %x1 : {_t('f32')}
               %m = arith.mulf %sum, %d : {_t('f32')}
               %z = arith.subf %m, %x1 : {_t('f32')}
               %lt = arith.cmpf olt, %x0, %x1 : {_t('f32')}
               %res = arith.select %lt, %z, %x0 : {_t('i1')}, {_t('f32')}"""
    got = _run(tmp_path, ["f32", "f32"], "f32", body, [a, b], np.float32)
    with np.errstate(all="ignore"):
        # The product's only use is the subtraction: fused into one fma (Triton's default).
        z = apple_nan(fma_f32(a + b, a / b, -b))  # arithmetic NaNs are Apple's canonical NaN
        want = np.where(a < b, z, a).astype(np.float32)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("fusion", [True, False])
def test_fp_fusion_rule(tmp_path: Path, fusion: bool) -> None:
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal(500).astype(np.float32) for _ in range(3))
    body = f"""%p = arith.mulf %x0, %x1 : {_t('f32')}
               %q = arith.mulf %x1, %x2 : {_t('f32')}
               %s1 = arith.addf %x2, %p : {_t('f32')}
               %s2 = arith.subf %s1, %q : {_t('f32')}
               %res = arith.addf %s2, %q : {_t('f32')}"""
    text = elementwise_kernel_1d(BLOCK, WARPS, ["f32"] * 3, "f32", body)
    program = lower_module(read_ttgir_file(write(tmp_path, "fuse", text)),
                           enable_fp_fusion=fusion)
    out = np.zeros(500, np.float32)
    dispatch(program, ((500 + BLOCK - 1) // BLOCK,), (a, b, c, out, 500))
    if fusion:  # %p has one use (fused); %q has two (kept apart)
        want = (fma_f32(a, b, c) - b * c) + b * c
        assert program.source.count("fma(") == 1
    else:
        want = ((c + a * b) - b * c) + b * c
        assert "fma(" not in program.source
    assert out.tobytes() == want.astype(np.float32).tobytes()


def test_dense_constant_tables(tmp_path: Path) -> None:
    # Non-splat dense constants index a program-scope table by the layout's flat index.
    vals = [1.5, -2.0, 0.1, 3.0e38, -0.0, 7.0, 1e-30, 42.0]
    ints = [3, -1, 2147483647, -2147483648, 0, 5, 6, 7]
    body = f"""%k = arith.constant dense<[{", ".join(f"{v:e}" for v in vals)}]> : tensor<8xf32, #L>
               %j = arith.constant dense<[{", ".join(map(str, ints))}]> : tensor<8xi32, #L>
               %jf = arith.sitofp %j : tensor<8xi32, #L> to tensor<8xf32, #L>
               %kx = arith.addf %x0, %k : tensor<8xf32, #L>
               %res = arith.addf %kx, %jf : tensor<8xf32, #L>"""
    text = elementwise_kernel_1d(8, 1, ["f32"], "f32", body)
    program = compile_ttgir(write(tmp_path, "dense", text))
    assert re.search(r"constant float dense_table_\d+\[8\]", program.source)
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    dispatch(program, (2,), (x, out, 16))
    k = np.tile(np.array(vals, np.float32), 2)
    j = np.tile(np.array(ints, np.int32).astype(np.float32), 2)
    assert out.tobytes() == ((x + k) + j).tobytes()
