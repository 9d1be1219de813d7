"""Bugs Triton's own unit tests found (docs/conformance.md), each pinned by a small kernel."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.driver import driver

from msltrans.ir.types import PointerType, ScalarType, parse_type


@pytest.fixture(autouse=True)
def _sim_driver():
    active = driver.active
    if type(active).__name__ != "MetalDriver" or active.engine_name != "sim":
        pytest.skip("needs the Metal driver on the simulator engine")


@triton.jit
def _negative_constant(X, s):
    # MLIR names this constant `%c-7_i32`: the module-text reader must match the `-`.
    tl.store(X + tl.program_id(0), s * -7)


def test_ssa_names_with_a_minus_sign() -> None:
    x = torch.zeros(2, dtype=torch.int32)
    _negative_constant[(2,)](x, 3)
    assert x.tolist() == [-21, -21]


@triton.jit
def _copy_from_const(in_ptr: tl.const, out, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(out + o, tl.load(in_ptr + o))


def test_const_pointer_arguments() -> None:
    x = torch.arange(128, dtype=torch.float32) - 64.5
    out = torch.zeros(128)
    _copy_from_const[(1,)](x, out, B=128)
    assert torch.equal(out, x)


def test_const_pointer_type_parses() -> None:
    t = parse_type('!tt.ptr<f32, "constant">')
    assert t == PointerType(ScalarType("f32"), "constant")
    assert str(t) == '!tt.ptr<f32, "constant">'
    assert parse_type("!tt.ptr<i8, 1>") == PointerType(ScalarType("i8"), 1)
