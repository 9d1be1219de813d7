"""NaNs from invalid operations have Apple's bits on the simulator (positive quiet NaN,
msltrans/sim/nan_canon.py), so the ops that read a NaN's sign agree with Triton's CUDA
backend, whose NaNs are positive too.

tests/data/cuda/nan_sign.npz comes from scripts/cuda_reference/nan_sign.py on an NVIDIA GPU;
the comparison skips while it is missing. Integer results (clamp → int16, fp → int32,
signbit, copysign) and every non-NaN float must match bit for bit (tl.sqrt, approximate on
both vendors, within 1 ulp); a NaN must be a NaN with the same sign. Row 2 (-g) is checked as
a sign flip of row 0: the GPU's Triton 3.6 lowered `-g` as `0 - g`, Triton 3.9 as
`arith.negf`. The payload is compared to each vendor's own canonical NaN: NVIDIA's is
0x7FFFFFFF, Apple's 0x7FC00000 (fp16 0x7FFF / 0x7E00, bf16 0x7FFF / 0x7FC0), so raw NaN
bits stored to memory differ between the two by design.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
import torch

from msltrans.ir import read_module
from msltrans.lower import lower_module
from msltrans.toolchain import to_ttgir
from msltrans.workloads import nan_sign_kernels as K
from tests.support.run_kernel import dispatch

NPZ = Path(__file__).resolve().parents[1] / "data" / "cuda" / "nan_sign.npz"
SIG = {"float32": "*fp32", "float16": "*fp16", "bfloat16": "*bf16"}
BITS = {"float32": np.uint32, "float16": np.uint16, "bfloat16": np.uint16}
APPLE_NAN = {"float32": 0x7FC00000, "float16": 0x7E00, "bfloat16": 0x7FC0}
SIGN = {"float32": 1 << 31, "float16": 1 << 15, "bfloat16": 1 << 15}


def _as_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    t = torch.from_numpy(values.astype(np.float32))
    if dtype == "float32":
        return t.numpy().view(np.uint32).copy()
    return t.to(getattr(torch, dtype)).view(torch.int16).numpy().view(np.uint16).copy()


def _isnan(bits: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "float32":
        return np.isnan(bits.view(np.float32))
    if dtype == "float16":
        return np.isnan(bits.view(np.float16))
    return (bits & 0x7F80 == 0x7F80) & (bits & 0x7F != 0)


@cache
def _program(op: str, dtype: str):  # noqa: ANN202
    sig = {"x_ptr": SIG[dtype], "y_ptr": SIG[dtype], "f_ptr": SIG[dtype], "i_ptr": "*i32",
           "n": "i32"}
    return lower_module(read_module(to_ttgir(K.nan_sign_kernel, sig,
                                             {"OP": op, "BLOCK": K.BLOCK}, 1)))


def run(op: str, dtype: str, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(x)
    xb, yb = _as_bits(x, dtype), _as_bits(y, dtype)
    f = np.zeros(K.N_FLOAT_ROWS * n, BITS[dtype])
    i = np.zeros(K.N_INT_ROWS * n, np.int32)
    dispatch(_program(op, dtype), (1,), (xb, yb, f, i, n))
    return f.reshape(K.N_FLOAT_ROWS, n), i.reshape(K.N_INT_ROWS, n)


@pytest.mark.parametrize("dtype", K.DTYPES)
def test_invalid_operations_give_apples_positive_nan(dtype: str) -> None:
    x, y = K.inputs()
    for op in ("mul", "add", "sub", "div", "sqrt"):
        f, _ = run(op, dtype, x, y)
        nan = _isnan(f[0], dtype)
        assert nan.any(), op
        assert (f[0][nan] == APPLE_NAN[dtype]).all(), (op, [hex(v) for v in f[0][nan]])


def test_issue_example_symmetric_clamp_of_minus_zero_times_inf() -> None:
    # x = NaN from -0.0 * inf: CUDA's clamp(x, -100, 100).to(int16) gives 100 (positive
    # canonical NaN through min.xorsign.abs); the host's negative NaN gave -100.
    f, i = run("mul", "float32", np.array([-0.0], np.float32), np.array([np.inf], np.float32))
    assert f[1][0] == np.float32(100.0).view(np.uint32) and i[0][0] == 100
    assert i[2][0] == 0 and i[3][0] == 1  # signbit clear, copysign(1, NaN) = +1


def test_nan_operand_is_canonicalised() -> None:
    # Apple's FMA unit returns its canonical NaN for a NaN operand (no payload or sign
    # propagation); x86 would pass 0xFFC01234 through.
    f, _ = run("plus0", "float32", *K.inputs())
    x, _ = K.inputs()
    neg_nan = np.flatnonzero(x.view(np.uint32) == 0xFFC01234)
    assert (f[0][neg_nan] == 0x7FC00000).all()


@pytest.mark.skipif(not NPZ.exists(), reason="no tests/data/cuda/nan_sign.npz (run "
                    "scripts/cuda_reference/nan_sign.py on an NVIDIA GPU)")
@pytest.mark.parametrize("dtype", K.DTYPES)
@pytest.mark.parametrize("op", K.OPS)
def test_sign_readers_agree_with_cuda(op: str, dtype: str) -> None:
    data = np.load(NPZ)
    x, y = data["x"], data["y"]
    f, i = run(op, dtype, x, y)
    cuda_i = data[f"i_{op}_{dtype}"]
    assert (i == cuda_i).all(), f"{op} {dtype}: int rows differ: {np.argwhere(i != cuda_i)}"
    cuda_f = data[f"f_{op}_{dtype}"].view(BITS[dtype])
    # Row 2 is -g. Triton 3.9's frontend emits arith.negf (a sign flip on both vendors, -0.0
    # for +0.0 and a negative NaN for a positive one); the reference GPU's Triton 3.6 emitted
    # `0 - g` (+0.0, CUDA's positive canonical NaN). So row 2 is checked against the IR the
    # simulator ran: row 0 with its sign bit flipped.
    assert (f[2] == f[0] ^ SIGN[dtype]).all(), (op, dtype, "negation is a sign flip")
    for row in (0, 1, 3):
        got, want = f[row], cuda_f[row]
        nan_g, nan_w = _isnan(got, dtype), _isnan(want, dtype)
        assert (nan_g == nan_w).all(), (op, dtype, row)
        if op == "sqrt":
            # tl.sqrt is the approximate square root on both vendors (CUDA's sqrt.approx.f32,
            # Metal's fast::sqrt); the simulator rounds it exactly: 1 ulp apart is allowed
            # for finite values (both are positive or both zero: the same sign bit)
            apart = np.abs(got[~nan_g].astype(np.int64) - want[~nan_w].astype(np.int64))
            assert (apart <= 1).all(), (op, dtype, row, int(apart.max()))
        else:
            assert (got[~nan_g] == want[~nan_w]).all(), (op, dtype, row)
        sign = SIGN[dtype]
        assert ((got[nan_g] & sign) == (want[nan_w] & sign)).all(), (op, dtype, row, "sign")
