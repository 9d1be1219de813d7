"""Dropout, the workload of Triton's tutorial 04, written for msltrans (tested in
tests/e2e/workloads/test_dropout.py). `keep_mask_dropout_kernel` takes the keep mask as an
int32 tensor (used directly as the `tl.where` condition); `philox_dropout_kernel` draws it in
the kernel with `tl.rand(seed, offsets)`, from an i32 or i64 seed. Both launch as
`kernel[grid](...)`.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# ---- kernels and their launches ---------------------------------------------------------


@triton.jit
def keep_mask_dropout_kernel(x_ptr, keep_ptr, out_ptr, n, p, BLOCK: tl.constexpr):
    """out = x / (1 - p) where keep != 0, else 0, BLOCK elements per program."""
    idx = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = idx < n
    x = tl.load(x_ptr + idx, mask=inside)
    keep = tl.load(keep_ptr + idx, mask=inside)
    # Survivors are scaled by 1 / (1 - p) so the expected value of each element is unchanged.
    tl.store(out_ptr + idx, tl.where(keep, x / (1 - p), 0.0), mask=inside)


@triton.jit
def philox_dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    """The same with the mask drawn here: element i survives when tl.rand(seed, i) > p, so
    the mask is never stored and the same seed replays it."""
    idx = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = idx < n
    x = tl.load(x_ptr + idx, mask=inside)
    u = tl.rand(seed, idx)
    tl.store(out_ptr + idx, tl.where(u > p, x / (1 - p), 0.0), mask=inside)


def mask_dropout(x: torch.Tensor, keep: torch.Tensor, p: float, block: int = 1024) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    keep_mask_dropout_kernel[(triton.cdiv(n, block),)](x, keep, out, n, p, BLOCK=block)
    return out


def seeded_dropout(x: torch.Tensor, p: float, seed: int, block: int = 1024) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    philox_dropout_kernel[(triton.cdiv(n, block),)](x, out, n, p, seed, BLOCK=block)
    return out
