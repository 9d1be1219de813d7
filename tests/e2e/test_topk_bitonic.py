"""The compile benchmark's bitonic top-k (msltrans/workloads/topk_kernel.py) at a small width:
values and indices equal torch.topk's on distinct values (checks the kernel the benchmark
times is a correct one)."""

from __future__ import annotations

import pytest
import torch

from msltrans.workloads.topk_kernel import topk_kernel


@pytest.mark.parametrize("n", [32, 64])
def test_bitonic_topk_matches_torch(n):
    rows, k = 3, 8
    gen = torch.Generator().manual_seed(n)
    x = torch.randperm(rows * n, generator=gen).float().reshape(rows, n) / 7 - 20
    values, indices = torch.empty(rows, k), torch.empty(rows, k, dtype=torch.int32)
    topk_kernel[(rows,)](x, values, indices, K=k, N=n, LOG_N=n.bit_length() - 1, num_warps=1)
    ref = torch.topk(x, k, dim=1)
    assert torch.equal(values, ref.values)
    assert torch.equal(indices.long(), ref.indices)
