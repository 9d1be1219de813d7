"""Record Triton's CUDA backend's fp32 `input_precision="ieee"` dots, for a bit-for-bit check.

Run on a machine with an NVIDIA GPU (the project's lent H200), from the repository root:
    PYTHONPATH=. python scripts/cuda_reference/dot_reference.py tests/data/cuda/dot_reference.npz
It runs `matmul_f32_kernel` (msltrans/workloads/dot_kernels.py: a grouped-order tiled matmul
with a K loop, masked K tail, `% M` row wrap, storing the fp32 accumulator) on fixed seeded
shapes and saves inputs, launch configuration and outputs. tests/e2e/test_dot_cuda_reference.py
replays each case through msltrans and requires identical bits: Triton's FMA dot on NVIDIA is
the in-order fma chain over K, which is msltrans's dot contract.
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from msltrans.workloads.dot_kernels import matmul_f32_kernel

# (M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, num_warps, A column-major, B column-major)
# Triton's CUDA backend needs M, N >= 16 and K >= 16 per dot block.
CASES = [
    (64, 64, 64, 32, 32, 16, 4, False, False),
    (45, 23, 37, 16, 16, 16, 2, False, False),
    (40, 24, 24, 16, 16, 16, 4, True, False),
    (24, 40, 100, 16, 16, 16, 1, False, True),
    (96, 80, 128, 32, 32, 32, 4, True, True),
    (33, 47, 200, 32, 16, 32, 8, False, False),
]


def run_case(i: int, case: tuple) -> dict[str, np.ndarray]:
    m, n, k, bm, bn, bk, nw, a_t, b_t = case
    g = torch.Generator().manual_seed(1000 + i)
    a = torch.randn((m, k), generator=g, dtype=torch.float32)
    b = torch.randn((k, n), generator=g, dtype=torch.float32)
    a_dev = a.t().contiguous().cuda().t() if a_t else a.cuda()
    b_dev = b.t().contiguous().cuda().t() if b_t else b.cuda()
    c = torch.empty((m, n), device="cuda", dtype=torch.float32)
    grid = (-(-m // bm) * -(-n // bn),)
    matmul_f32_kernel[grid](a_dev, b_dev, c, m, n, k, a_dev.stride(0), a_dev.stride(1),
                            b_dev.stride(0), b_dev.stride(1), c.stride(0), c.stride(1),
                            BM=bm, BN=bn, BK=bk, GROUP_M=3, num_warps=nw)
    torch.cuda.synchronize()
    return {f"case{i}_a": a.numpy(), f"case{i}_b": b.numpy(), f"case{i}_out": c.cpu().numpy(),
            f"case{i}_config": np.array(case, dtype=np.int64)}


def main(out: str) -> int:
    data: dict[str, np.ndarray] = {"triton_version": np.array(__import__("triton").__version__),
                                   "device": np.array(torch.cuda.get_device_name())}
    for i, case in enumerate(CASES):
        data.update(run_case(i, case))
    np.savez(out, **data)
    print(f"wrote {out}: {len(CASES)} cases on {data['device']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "dot_reference.npz"))
