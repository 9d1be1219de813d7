"""Real third-party MSL through the shim: PyTorch's c10/metal headers and ATen's Metal sort
kernels, read from the installed torch wheel at run time (none of their text is stored in this
repository); each test skips, saying why, when the wheel does not ship the file it needs."""

# ruff: noqa: E501 -- embedded MSL sources keep their own line structure

import os

import numpy as np
import pytest

from tests.support.shim import compile_shader

torch = pytest.importorskip("torch")
TORCH_INCLUDE = os.path.join(os.path.dirname(torch.__file__), "include")
if not os.path.exists(os.path.join(TORCH_INCLUDE, "c10", "metal", "indexing.h")):
    pytest.skip("this torch wheel ships no c10/metal headers", allow_module_level=True)

# The functor and the thin kernels below are ours; they call unary_dense, erf, max, log1p and
# AtomicType from the wheel's c10/metal headers.
C10_SOURCE = """
#include <c10/metal/indexing.h>
#include <c10/metal/atomic.h>
#include <c10/metal/special_math.h>
using namespace metal;
struct sigmoid_functor {
  template <typename T> inline T operator()(const T x) { return T(1.0f / (1.0f + ::metal::precise::exp(-float(x)))); }
};
kernel void sigmoid_dense(device float* out [[buffer(0)]], constant float* in [[buffer(1)]],
                          constant uint& numel [[buffer(2)]], uint index [[thread_position_in_grid]]) {
  c10::metal::unary_dense<float, sigmoid_functor>(out, in, numel, index);
}
kernel void helpers(constant float* x [[buffer(0)]], device float* erf_out [[buffer(1)]],
                    device float* max_out [[buffer(2)]], device float* log1p_out [[buffer(3)]],
                    device c10::metal::AtomicType_t<float>* total [[buffer(4)]],
                    device c10::metal::AtomicType_t<half>* htotal [[buffer(5)]],
                    uint i [[thread_position_in_grid]]) {
  erf_out[i] = c10::metal::erf(x[i]);
  max_out[i] = c10::metal::max(x[i], 0.5f);
  log1p_out[i] = c10::metal::log1p(x[i]);
  c10::metal::AtomicType<float>::atomic_add(total, 0, x[i]);
  c10::metal::AtomicType<half>::atomic_add(htotal, i % 2, half(1.0f));
}
"""


def test_c10_metal_unary_dense_and_helpers():
    lib = compile_shader(C10_SOURCE, include_dirs=[TORCH_INCLUDE])
    n = 103  # not a multiple of ILP_PER_THREAD: exercises PyTorch's tail loop
    x = np.linspace(-6, 6, n).astype(np.float32)
    out = np.zeros(n, np.float32)
    threads = (n + 3) // 4
    lib.sigmoid_dense(out, x, np.uint32(n), threads=threads, group_size=32)
    ref = 1 / (1 + np.exp(-x.astype(np.float64)))
    assert np.max(np.abs(out - ref)) < 1e-6

    x = np.concatenate([np.linspace(-3, 3, 60), [np.nan, np.inf, -0.9]]).astype(np.float32)
    m = len(x)
    erf_out, max_out, log1p_out = (np.zeros(m, np.float32) for _ in range(3))
    total = np.zeros(1, np.float32)
    htotal = np.zeros(2, np.float16)
    finite = np.isfinite(x)
    lib.helpers(x, erf_out, max_out, log1p_out, total, htotal, threads=m, group_size=m)
    import math

    erf_ref = np.array([math.erf(v) if np.isfinite(v) else (1.0 if v > 0 else np.nan) for v in x])
    assert np.nanmax(np.abs(erf_out[finite] - erf_ref[finite])) < 1e-6
    assert np.isnan(max_out[np.isnan(x)]).all()  # PyTorch's NaN-propagating max
    assert np.array_equal(max_out[finite], np.maximum(x[finite], np.float32(0.5)))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(
            log1p_out[finite],
            np.log1p(x[finite].astype(np.float64)),
            atol=1e-6,
            rtol=1e-6,
            equal_nan=True,
        )
    assert np.isnan(total[0])  # the NaN input was added too
    assert htotal.tolist() == [32.0, 31.0]  # CAS-emulated half atomics


# As PyTorch's Sort.metal includes them: SortRadix.h needs sort_init/sort_compare from
# SortMerge.h. Both headers instantiate every sort kernel for ~10 dtypes (hundreds of kernels),
# so this compile takes minutes: marked slow.
RADIX_SCAN_SOURCE = """
#include <c10/metal/utils.h>
#include <metal_stdlib>
using namespace metal;
#include <ATen/native/mps/kernels/SortMerge.h>
#include <ATen/native/mps/kernels/SortRadix.h>
"""


def _radix_scan_text() -> str:
    path = os.path.join(TORCH_INCLUDE, "ATen", "native", "mps", "kernels", "SortRadix.h")
    if not os.path.exists(path):
        pytest.skip(f"this torch wheel ships no {path}")
    text = open(path).read()
    start, end = "constant constexpr int SCAN_TPTG", "// Must match host kMaxFusedBlocks"
    if start not in text or end not in text:
        pytest.skip(f"{path} no longer has the radix_scan kernel between {start!r} and {end!r}")
    return text[text.index(start) : text.index(end)]


def _check_radix_scan(lib):
    rows, n_entries = 2, 3000
    rng = np.random.default_rng(4)
    hist = rng.integers(0, 50, (rows, n_entries)).astype(np.uint32)
    h = hist.copy()
    lib.radix_scan(h, np.int32(n_entries), threads=(1024, rows), group_size=(1024, 1))
    ref = np.concatenate([np.zeros((rows, 1), np.uint64), np.cumsum(hist, axis=1)[:, :-1]], axis=1)
    assert np.array_equal(h, ref.astype(np.uint32))


def test_aten_radix_scan_kernel_text():
    """ATen's radix_scan kernel, cut at run time out of the wheel's SortRadix.h and compiled
    on its own (threadgroup array, simd_prefix_exclusive_sum, simd_sum, barriers, 1024-thread
    groups)."""
    import msltrans.sim as sim

    src = "#include <metal_stdlib>\nusing namespace metal;\n" + _radix_scan_text()
    _check_radix_scan(sim.compile_shader(src, name="radix_scan.metal"))


@pytest.mark.slow
def test_aten_sort_radix_header_included():
    """SortMerge.h and SortRadix.h #included, as PyTorch's Sort.metal does: needs the runtime to
    find kernels (and rewrite function-scope `threadgroup` arrays) in included headers and
    to read explicit instantiations with unnamed parameters."""
    import msltrans.sim as sim

    lib = sim.compile_shader(RADIX_SCAN_SOURCE, include_dirs=[TORCH_INCLUDE])
    _check_radix_scan(lib)
