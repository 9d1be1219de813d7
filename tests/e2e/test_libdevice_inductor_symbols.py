"""Every `libdevice.<name>` the installed PyTorch's Inductor can emit is either lowered by
msltrans (and measured by tests/e2e/test_libdevice_accuracy.py) or refused by name.

The list is read from the installed torch's sources (codegen/triton.py's op table, the
OverridesData table in codegen/common.py, runtime/triton_helpers.py), so a new torch that
emits a new function fails here until the function is classified.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import triton
import triton.language as tl
import triton.language.extra.cuda.libdevice as cuda_libdevice
from triton.language.extra import libdevice

from msltrans.errors import MetalNonRecoverableError
from tests.e2e.test_diff_libdevice import compile_with_libdevice
from tests.support import libdevice_refs as refs

INDUCTOR_FILES = ("_inductor/codegen/triton.py", "_inductor/codegen/common.py",
                  "_inductor/runtime/triton_helpers.py")
MEASURED = set(refs.UNARY + refs.MAPPED + refs.MAPPED_BINARY + refs.PREDICATES) | {
    "hypot", "nextafter", "mul_rn", "ldexp", "ilogb", "llrint"}
REFUSED = {"j0", "j1", "y0", "y1"}  # Bessel J/Y: not implemented (docs/semantics.md)
# Emitted only when torch.version.hip is set; CUDA's libdevice module (the one msltrans
# binds) has no such function, so Triton's front end stops before msltrans sees it.
HIP_ONLY = {"fast_tanhf"}


def inductor_libdevice_names() -> set[str]:
    import torch

    root = Path(torch.__file__).parent
    names: set[str] = set()
    for rel in INDUCTOR_FILES:
        names |= set(re.findall(r"\blibdevice\.([A-Za-z_][A-Za-z0-9_]*)\s*\(",
                                (root / rel).read_text()))
    return names


def test_the_scan_finds_inductors_functions() -> None:
    names = inductor_libdevice_names()
    # functions every Inductor since 2.1 emits: the scan must see them
    assert {"exp", "log1p", "expm1", "lgamma", "erfinv", "pow", "llrint"} <= names, names


@pytest.mark.parametrize("name", sorted(inductor_libdevice_names()))
def test_every_inductor_libdevice_function_is_lowered_or_refused(name: str) -> None:
    if name in HIP_ONLY:
        assert not hasattr(cuda_libdevice, name)
        return
    assert hasattr(cuda_libdevice, name), f"{name} is not a CUDA libdevice function"
    assert name in MEASURED | REFUSED, (
        f"Inductor emits libdevice.{name}, which msltrans neither lowers nor refuses on purpose: "
        "add it to lower/elementwise/ops_libdevice.py with an accuracy test, or to its refusals")


@triton.jit
def _bessel_j0(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, libdevice.j0(tl.load(x_ptr + offs)))


@triton.jit
def _bessel_y1(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, libdevice.y1(tl.load(x_ptr + offs)))


@pytest.mark.parametrize("kernel, symbol", [(_bessel_j0, "__nv_j0f"), (_bessel_y1, "__nv_y1f")])
def test_refused_functions_are_named(kernel, symbol: str) -> None:
    with pytest.raises(MetalNonRecoverableError, match=symbol) as info:
        compile_with_libdevice(kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": 32})
    assert "Bessel" in str(info.value)
