"""Shared plumbing for the `test_upstream_style_*.py` fast subset.

Inputs are made here, references are computed by the tests in numpy/torch on CPU, and the
kernels run either the way users launch them (`kernel[grid](...)` on CPU torch tensors with
msltrans's driver active) or through `tests/support/run_kernel.py` (numpy arrays).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

TORCH = {
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "uint16": torch.uint16, "uint32": torch.uint32,
    "uint64": torch.uint64, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float32": torch.float32, "bool": torch.bool,
}
TL = {
    "int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
    "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32, "uint64": tl.uint64,
    "float16": tl.float16, "bfloat16": tl.bfloat16, "float32": tl.float32,
}
INTS = ("int8", "int16", "int32", "int64")
UINTS = ("uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "bfloat16", "float32")


def require_metal_sim() -> None:
    """Skip unless kernels launched with `kernel[grid]` reach msltrans's simulator driver."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("runs compiled kernels, not the interpreter")
    active = triton.runtime.driver.active
    if type(active).__name__ != "MetalDriver" or getattr(active, "engine_name", "") != "sim":
        pytest.skip("needs msltrans's Metal driver on the simulator engine")


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def is_signed(dtype: str) -> bool:
    return dtype in INTS


def bits(dtype: str) -> int:
    return 8 * torch.tensor([], dtype=TORCH[dtype]).element_size()


def rand_np(dtype: str, shape: int | tuple[int, ...], seed: int, low: int | None = None,
            high: int | None = None) -> np.ndarray:
    """Seeded values as float32 for the float dtypes (rounded to dtype), else exact ints."""
    rng = np.random.default_rng(seed)
    if is_float(dtype):
        x = (rng.standard_normal(shape) * 4).astype(np.float32)
        return torch.from_numpy(x).to(TORCH[dtype]).float().numpy()
    info = np.iinfo(dtype)
    lo = info.min if low is None else max(low, info.min)
    hi = info.max if high is None else min(high, info.max)
    return rng.integers(lo, hi, size=shape, dtype=dtype, endpoint=True)


def edge_np(dtype: str) -> np.ndarray:
    """Edge values of `dtype` (float ones as float32 that are exact in dtype)."""
    if is_float(dtype):
        finfo = torch.finfo(TORCH[dtype])
        vals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, -7.25, finfo.max, -finfo.max,
                finfo.tiny, finfo.smallest_normal / 4, -finfo.smallest_normal / 8,
                float("inf"), float("-inf"), float("nan"), 1e-3, 100.0]
        return torch.tensor(vals, dtype=TORCH[dtype]).float().numpy()
    info = np.iinfo(dtype)
    vals = {0, 1, 2, 3, 7, info.max, info.max - 1, info.min, info.min + 1, info.max // 2,
            info.max // 2 + 1, 100}
    if info.min < 0:
        vals |= {-1, -2, -3, -7, -100}
    if bits(dtype) == 64:
        vals |= {2**31, 2**32 + 5, 2**53 + 1}
        if info.min < 0:
            vals |= {-(2**33) - 3}
    return np.array(sorted(vals), dtype=dtype)


def mixed_np(dtype: str, n: int, seed: int) -> np.ndarray:
    """`n` values: the edge values first, then seeded random ones."""
    out = rand_np(dtype, n, seed)
    e = edge_np(dtype)
    k = min(n, len(e))
    out[:k] = e[:k]
    return out


def to_t(x: np.ndarray, dtype: str) -> torch.Tensor:
    """A CPU torch tensor of `dtype` holding `x` (float dtypes via float32)."""
    t = torch.from_numpy(np.ascontiguousarray(x))
    return t.to(TORCH[dtype]) if is_float(dtype) else t.clone()


def to_np(t: torch.Tensor) -> np.ndarray:
    """Float tensors as float32 numpy (bf16 included), others as their own dtype."""
    return t.float().numpy() if t.dtype.is_floating_point else t.numpy()


def assert_same(got: np.ndarray | torch.Tensor, ref: np.ndarray | torch.Tensor) -> None:
    """Bit-for-bit equality, any NaN matching any NaN (and -0.0 distinct from +0.0)."""
    g = to_np(got) if isinstance(got, torch.Tensor) else np.asarray(got)
    r = to_np(ref) if isinstance(ref, torch.Tensor) else np.asarray(ref)
    assert g.shape == r.shape, (g.shape, r.shape)
    assert g.dtype == r.dtype, (g.dtype, r.dtype)
    if g.dtype.kind == "f":
        gn, rn = np.isnan(g), np.isnan(r)
        bad = (gn != rn) | (~gn & (g.view(f"u{g.itemsize}") != r.view(f"u{r.itemsize}")))
    else:
        bad = g != r
    if bad.any():
        idx = np.argwhere(bad)[:8]
        detail = ", ".join(f"{tuple(i)}: got {g[tuple(i)]!r} want {r[tuple(i)]!r}" for i in idx)
        raise AssertionError(f"{int(bad.sum())} of {g.size} differ: {detail}")


def promote(a: str, b: str, div_or_mod: bool = False) -> str:
    """Triton's binary-op result type for two tensor operands (semantic.computation_type)."""
    if is_float(a) or is_float(b):
        if div_or_mod or "float32" in (a, b):
            return "float32"
        if "float16" in (a, b):
            return "float16"
        return "bfloat16" if a == b == "bfloat16" else "float32"
    if is_signed(a) == is_signed(b):
        return a if bits(a) > bits(b) else b
    u, s = (a, b) if not is_signed(a) else (b, a)
    return u if bits(u) >= bits(s) else s
