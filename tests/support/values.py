"""Value sets for differential tests: the edge cases every lowering must survive.

Each generator returns a numpy array of the requested dtype that mixes hand-picked edge
values (zero, -0.0, ±1, extremes, NaN, ±inf, denormals, values past 2**31 / 2**63) with
seeded random values, so that odd sizes and masks see both kinds.
"""

from __future__ import annotations

import numpy as np

try:  # bfloat16 is not a numpy dtype; tests that need it go through torch.
    import torch
except ImportError:  # pragma: no cover - torch is a hard dependency of the project
    torch = None

INT_DTYPES = ("int8", "int16", "int32", "int64")
UINT_DTYPES = ("uint8", "uint16", "uint32", "uint64")
FLOAT_DTYPES = ("float16", "float32")  # bfloat16: see bf16_edge_values


def int_edge_values(dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    vals = {0, 1, 2, 3, 7, info.max, info.max - 1, info.min, info.min + 1, info.max // 2,
            info.max // 2 + 1}
    if info.min < 0:
        vals |= {-1, -2, -3, -7}
    bits = info.bits
    if bits >= 32:
        vals |= {2**31 - 1, 2**31, 2**31 + 1} if info.max >= 2**31 + 1 else {2**31 - 1}
    if bits == 64:
        vals |= {2**32, 2**32 + 1, 2**53 + 1}
        if info.max >= 2**63:
            vals |= {2**63, 2**63 + 1, 2**64 - 1}
    ok = sorted(v for v in vals if info.min <= v <= info.max)
    return np.array(ok, dtype=dtype)


def float_edge_values(dtype: str) -> np.ndarray:
    finfo = np.finfo(dtype)
    tiny = finfo.smallest_subnormal
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, -7.25, float(finfo.max),
            float(-finfo.max), float(finfo.tiny), float(tiny), float(-tiny), float(tiny * 3),
            np.inf, -np.inf, np.nan, 65504.0 if dtype == "float16" else 1e30, 2.0**31,
            -(2.0**31), 2.0**63]
    with np.errstate(over="ignore"):
        return np.array(vals, dtype=dtype)


def edge_values(dtype: str) -> np.ndarray:
    if dtype in INT_DTYPES or dtype in UINT_DTYPES:
        return int_edge_values(dtype)
    return float_edge_values(dtype)


def mixed_values(dtype: str, n: int, seed: int = 0) -> np.ndarray:
    """`n` values: the edge values first (cycled if n is small), then random ones."""
    rng = np.random.default_rng(seed)
    edges = edge_values(dtype)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        rand = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    else:
        rand = (rng.standard_normal(n) * 100).astype(dtype)
    out = rand.copy()
    k = min(n, len(edges))
    out[:k] = edges[:k]
    return out


def bf16_edge_values() -> torch.Tensor:
    """bfloat16 edge values as a torch tensor (numpy has no bfloat16)."""
    assert torch is not None
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, 3.0e38, -3.0e38, 1.1754944e-38,
            9.2e-41, -9.2e-41, float("inf"), float("-inf"), float("nan"), 2.0**31, 2.0**63]
    return torch.tensor(vals, dtype=torch.bfloat16)
