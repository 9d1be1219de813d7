"""Triton features some test kernels need, probed on the Triton in hand (never by version).

`pytest.mark.skipif(not <probe>(), reason=...)` skips such a test below the Triton that has the
feature; `tests/conftest.py` does the same for `tl.dot` accumulators wherever they occur.
"""

from __future__ import annotations

import functools
import inspect

import triton
import triton.language as tl

from msltrans._triton_compat import descriptor_has_tf32_flag


def dot_infers_out_dtype() -> bool:
    """`tl.dot(a, b, acc)` takes its result type from a non-fp32 `acc` (Triton 3.8 on);
    before, `out_dtype` defaults to fp32 and Triton asserts that `acc` is fp32."""
    return inspect.signature(tl.dot).parameters["out_dtype"].default is None


DOT_ACC_REASON = ("this Triton's tl.dot defaults out_dtype to fp32 and refuses a non-fp32 "
                  "accumulator (3.8 on infers it from acc)")


@triton.jit(noinline=True)
def _tensor_helper(a, BLOCK: tl.constexpr):
    return tl.arange(0, BLOCK) * a


@triton.jit
def _tensor_helper_kernel(out_ptr, a, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BLOCK), _tensor_helper(a, BLOCK))


@functools.cache
def noinline_returns_tensors() -> bool:
    """Whether Triton's own passes accept a `noinline` helper that returns a tensor (3.6 and
    3.7 fail converting it to TTGIR: the function type keeps the tensor without a layout)."""
    from msltrans.toolchain import to_ttgir

    try:
        to_ttgir(_tensor_helper_kernel, {"out_ptr": "*i32", "a": "i32"}, {"BLOCK": 32})
    except RuntimeError:
        return False
    return True


NOINLINE_TENSOR_REASON = ("this Triton fails converting a noinline helper that returns a "
                          "tensor to TTGIR (a Triton bug fixed in 3.8)")


def descriptors_round_to_tf32() -> bool:
    """Whether TensorDescriptor has `round_f32_to_tf32` (3.7 on)."""
    return descriptor_has_tf32_flag()
