"""Helpers for the tt.dot tests: compile with an explicit signature (bf16 has no numpy dtype),
inputs, and the references (the in-order fp32 fma chain; exact int32)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from msltrans.lower import MslProgram
from msltrans.lower.dot.info import dot_records
from msltrans.toolchain import lower_with_dot_path
from tests.support.fma import fma_chain_matmul
from tests.support.run_kernel import dispatch

compile_with = lower_with_dot_path  # (fn, signature, num_warps, path, **constexprs)

TRITON_PTR = {"float32": "*fp32", "float16": "*fp16", "bfloat16": "*bf16", "int8": "*i8",
              "int32": "*i32"}


def run(program: MslProgram, grid: tuple[int, ...], *args: Any) -> None:
    dispatch(program, grid, args)


def dot_stats(program: MslProgram) -> list[dict[str, str]]:
    """The `// msltrans-dot:` record of each tt.dot the lowering emitted."""
    return dot_records(program.source)


def randn(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    """Device-ready array of `dtype` (bf16 as its uint16 bits) with standard-normal values."""
    g = torch.Generator().manual_seed(seed)
    if dtype == "int8":
        return torch.randint(-128, 128, shape, generator=g, dtype=torch.int8).numpy()
    t = torch.randn(shape, generator=g, dtype=torch.float32).to(getattr(torch, dtype))
    if dtype == "bfloat16":
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def as_f32(x: np.ndarray, dtype: str) -> np.ndarray:
    """The exact fp32 value of each element (bf16 bits widened)."""
    if dtype == "bfloat16":
        return (x.astype(np.uint32) << 16).view(np.float32)
    return x.astype(np.float32)


def chain(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
    """fp32 in-order fma chain over k, batched over leading dims."""
    if a.ndim == 2:
        return fma_chain_matmul(a, b, c)
    return np.stack([fma_chain_matmul(a[i], b[i], None if c is None else c[i])
                     for i in range(a.shape[0])])


def int_dot(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """int8 x int8 + int32 with int32 wrap-around (exact in int64 first)."""
    wide = a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64)
    return ((wide + 2**31) % 2**32 - 2**31).astype(np.int32)


def same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
