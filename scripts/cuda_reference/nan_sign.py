"""Record the NaNs Triton's CUDA backend produces from invalid operations (0 x inf, inf - inf,
0 / 0, sqrt(-1), a NaN operand) and what the ops that read a NaN's sign make of them:
symmetric tl.clamp (min.xorsign.abs), negation, abs, fp -> int, signbit, copysign.

Run on a machine with an NVIDIA GPU (the project's lent one), from the repository root:
    PYTHONPATH=. python scripts/cuda_reference/nan_sign.py "$OUT/nan_sign.npz"
The .npz goes to tests/data/cuda/nan_sign.npz; tests/e2e/test_nan_sign.py compares
msltrans's results with it (and skips while it is missing). The kernel and the inputs are
msltrans/workloads/nan_sign_kernels.py, shared with that test.
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from msltrans.workloads import nan_sign_kernels as K

DEV = "cuda"
TORCH = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
BITS = {"float32": torch.int32, "float16": torch.int16, "bfloat16": torch.int16}


def main(path: str) -> None:
    x, y = K.inputs()
    n = len(x)
    rec: dict[str, np.ndarray] = {"x": x, "y": y}
    for dt in K.DTYPES:
        tx = torch.from_numpy(x).to(DEV).to(TORCH[dt])
        ty = torch.from_numpy(y).to(DEV).to(TORCH[dt])
        rec[f"in_{dt}"] = torch.stack([tx, ty]).cpu().view(BITS[dt]).numpy()
        for op in K.OPS:
            f = torch.zeros(K.N_FLOAT_ROWS * n, dtype=TORCH[dt], device=DEV)
            i = torch.zeros(K.N_INT_ROWS * n, dtype=torch.int32, device=DEV)
            K.nan_sign_kernel[(1,)](tx, ty, f, i, n, OP=op, BLOCK=K.BLOCK)
            torch.cuda.synchronize()
            rec[f"f_{op}_{dt}"] = f.cpu().view(BITS[dt]).numpy().reshape(K.N_FLOAT_ROWS, n)
            rec[f"i_{op}_{dt}"] = i.cpu().numpy().reshape(K.N_INT_ROWS, n)
    rec["device"] = np.array(torch.cuda.get_device_name())
    rec["versions"] = np.array(f"torch {torch.__version__}, triton "
                               f"{__import__('triton').__version__}")
    np.savez_compressed(path, **rec)
    print(f"wrote {path}: {len(rec)} arrays")


if __name__ == "__main__":
    main(sys.argv[1])
