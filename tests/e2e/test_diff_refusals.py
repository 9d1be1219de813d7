"""Every refusal of the elementwise families raises MetalNonRecoverableError naming the op
and saying what to do instead (correct or refuse)."""

from __future__ import annotations

from pathlib import Path

import pytest
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from msltrans.ir.model import UNKNOWN_LOC, Op, Value
from msltrans.ir.types import ScalarType
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowering_of
from tests.support.diff import compile_typed
from tests.support.run_kernel import compile_ttgir
from tests.support.ttgir_gen import elementwise_kernel_1d, write

BLOCK = 128


def _t(elem: str) -> str:
    return f"tensor<{BLOCK}x{elem}, #L>"


@pytest.mark.parametrize(("op", "elem"), [("arith.divsi", "i1"), ("arith.remui", "i1"),
                                           ("arith.shli", "i1"), ("arith.maxsi", "i1")])
def test_integer_ops_refuse_i1(tmp_path: Path, op: str, elem: str) -> None:
    body = f"""%b = arith.cmpi slt, %x0, %x1 : {_t('i32')}
               %v = {op} %b, %b : {_t(elem)}
               %res = arith.extui %v : {_t('i1')} to {_t('i32')}"""
    path = write(tmp_path, "k", elementwise_kernel_1d(BLOCK, 2, ["i32", "i32"], "i32", body))
    with pytest.raises(MetalNonRecoverableError, match=f"cannot lower `{op}`.*on bool.*"
                       r"only i8, i16, i32 and i64"):
        compile_ttgir(path)


@pytest.mark.parametrize("op", ["math.exp", "math.sin", "math.erf", "math.sqrt"])
def test_transcendentals_refuse_16_bit_floats(tmp_path: Path, op: str) -> None:
    path = write(tmp_path, "k", elementwise_kernel_1d(
        BLOCK, 2, ["f16"], "f16", f"%res = {op} %x0 : {_t('f16')}"))
    with pytest.raises(MetalNonRecoverableError, match=r"on half.*cast to tl.float32 first"):
        compile_ttgir(path)


@pytest.mark.parametrize("op", ["arith.negf", "math.floor", "arith.maxnumf", "math.fma"])
def test_float_ops_refuse_non_float_results(op: str) -> None:
    # Not reachable from verified TTGIR (the MLIR verifier rejects it); the guard keeps a
    # mis-typed op from ever becoming integer MSL.
    i32 = ScalarType("i32")
    n = {"arith.negf": 1, "math.floor": 1, "arith.maxnumf": 2, "math.fma": 3}[op]
    operands = tuple(Value(i, i32) for i in range(n))
    fake = Op(op, operands, (Value(9, i32),), {}, (), UNKNOWN_LOC)
    em = Emitter()
    for v in operands:
        em.bind(v, f"v{v.id}")
    em.op = fake
    with pytest.raises(MetalNonRecoverableError, match=r"on int.*only f16, bf16 and f32"):
        lowering_of(op)(em, fake)


@triton.jit
def _tanh_of_half(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.exp(x.to(tl.float32)).to(tl.float16))


def test_the_suggested_fix_compiles() -> None:
    # The hint's advice (compute in fp32, round back) goes through.
    program = compile_typed(_tanh_of_half, {"x_ptr": "*fp16", "out_ptr": "*fp16"},
                            {"BLOCK": BLOCK})
    assert "precise::exp" in program.source


@pytest.mark.parametrize("op", ["math.exp", "arith.maxnumf", "math.floor"])
def test_fp64_follows_the_one_policy(tmp_path: Path, op: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    operands = "%x0, %x0" if op == "arith.maxnumf" else "%x0"
    path = write(tmp_path, "k", elementwise_kernel_1d(
        BLOCK, 2, ["f64"], "f64", f"%res = {op} {operands} : {_t('f64')}"))
    with pytest.warns(UserWarning, match="fp64 downcast to fp32"):
        program = compile_ttgir(path)
    assert "double" not in program.source
    monkeypatch.setenv("MSLTRANS_FP64", "refuse")
    with pytest.raises(MetalNonRecoverableError, match="fp64 is not available.*"
                       "unset MSLTRANS_FP64=refuse"):
        compile_ttgir(path)
