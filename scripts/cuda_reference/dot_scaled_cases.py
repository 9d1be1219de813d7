"""Record Triton's CUDA backend's `tl.dot_scaled` bits on recorded inputs (run on the lent H200):
    PYTHONPATH=. python scripts/cuda_reference/dot_scaled_cases.py \
        tests/data/cuda/dot_scaled_upstream.npz
Inputs: tests/data/cuda/dot_scaled_upstream_inputs.npz (upstream test_scaled_dot's own, see
msltrans/workloads/dot_scaled_cases_kernels.py). Stores `<case>_out` (the output's bit patterns) and
the Triton version.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import triton

from msltrans.workloads import dot_scaled_cases_kernels as K

ROOT = Path(__file__).resolve().parents[2]

TORCH = {"torch.float16": torch.float16, "torch.bfloat16": torch.bfloat16,
         "torch.uint8": torch.uint8}


def _tensor(bits: np.ndarray, dtype: str) -> torch.Tensor:
    t = torch.from_numpy(np.ascontiguousarray(bits)).cuda()
    return t if dtype == "torch.uint8" else t.view(TORCH[dtype])


def main(path: str) -> None:
    data = np.load(ROOT / "tests" / "data" / "cuda" / "dot_scaled_upstream_inputs.npz")
    out: dict[str, np.ndarray] = {"triton_version": np.array(triton.__version__)}
    for case in K.cases(data):
        a = K.case_args(data, case)
        z = torch.zeros((a["M"], a["N"]), dtype=TORCH[a["z_dtype"]], device="cuda")
        sx = None if a["scale_x"] is None else torch.from_numpy(a["scale_x"]).cuda()
        sy = None if a["scale_y"] is None else torch.from_numpy(a["scale_y"]).cuda()
        K.dot_scaled_tile[(1,)](_tensor(a["x"], a["x_dtype"]), sx, _tensor(a["y"], a["y_dtype"]),
                                sy, z, M=a["M"], N=a["N"], K=a["K"], FMT_A=a["type_a"],
                                FMT_B=a["type_b"], num_warps=4)
        torch.cuda.synchronize()
        out[f"{case}_out"] = z.view(torch.int16).cpu().numpy()
    np.savez_compressed(path, **out)
    print(f"{len(out) - 1} cases; triton {triton.__version__} -> {path}")


if __name__ == "__main__":
    main(sys.argv[1])
