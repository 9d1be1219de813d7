"""Evidence for the test-assumes entries of scripts/conformance/classify.py whose upstream test
is faulty in its own setup: the same kernel, set up soundly, does what the test checks."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.driver import driver


@pytest.fixture(autouse=True)
def _sim_driver():
    active = driver.active
    if type(active).__name__ != "MetalDriver" or active.engine_name != "sim":
        pytest.skip("needs the Metal driver on the simulator engine")


def _store_at_own_value(annotation: str):
    def kernel(X, v):
        tl.store(X + v, v)

    kernel.__annotations__ = {"v": annotation}
    return triton.jit(kernel)


@pytest.mark.parametrize(("signed", "width"), [(s, w) for s in (False, True)
                                               for w in (8, 16, 32, 64)] + [(False, 1)])
def test_int_annotation_in_bounds(signed: bool, width: int) -> None:
    """Upstream's test_annotations.py::test_int_annotation stores `v` (3) at `X + v` into a
    ONE-element tensor: 8 bytes past its end (a GPU allocator's slack hides that; the
    simulator's guard page reports it). With room for X[3] the same kernel passes the test's
    TTIR checks and stores 3 at X[3] — for uint1, 3 truncates to 1, stored at X[1]."""
    kernel = _store_at_own_value(f"tl.{'' if signed else 'u'}int{width}")
    x = torch.full((4,), -1.0)
    h = kernel[(1,)](x, 3)
    ttir = h.asm["ttir"]
    if not signed and width < 64:
        assert "arith.extui %v" in ttir
    assert f"%v: i{width}" in ttir
    assert f"arith.{'si' if signed else 'ui'}tofp" in ttir
    want = [-1.0, 1.0, -1.0, -1.0] if width == 1 else [-1.0, -1.0, -1.0, 3.0]
    assert x.tolist() == want
