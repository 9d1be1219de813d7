"""tf32-style dot precisions are refused with msltrans's own message, from Python too."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from triton.compiler.errors import CompilationError
from triton.runtime.driver import driver

from msltrans.errors import MetalNonRecoverableError
from msltrans.options import MetalOptions


def test_options_advertise_ieee_only() -> None:
    opts = MetalOptions()
    assert opts.allowed_dot_input_precisions == ("ieee",)
    assert "ieee" in opts.allowed_dot_input_precisions
    for name in ("tf32", "tf32x3", "bf16x3"):
        with pytest.raises(MetalNonRecoverableError, match="input_precision='ieee'"):
            name in opts.allowed_dot_input_precisions  # noqa: B015 - the check itself raises


@triton.jit
def _dot_tf32(a_ptr, c_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    a = tl.load(a_ptr + r[:, None] * B + r[None, :])
    tl.store(c_ptr + r[:, None] * B + r[None, :], tl.dot(a, a, input_precision="tf32"))


def test_tf32_dot_from_python_names_the_fix() -> None:
    if type(driver.active).__name__ != "MetalDriver":
        pytest.skip("needs the Metal driver")
    a, c = torch.randn(16, 16), torch.zeros(16, 16)
    with pytest.raises(CompilationError) as exc:
        _dot_tf32[(1,)](a, c, B=16)
    assert isinstance(exc.value.__cause__, MetalNonRecoverableError)
    assert "Apple GPUs have no tf32" in str(exc.value)
    assert "input_precision='ieee'" in str(exc.value)
    assert not c.any()
