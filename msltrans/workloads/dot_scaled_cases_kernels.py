"""The kernel and inputs shared by scripts/cuda_reference/dot_scaled_cases.py (run on the lent
NVIDIA GPU) and tests/e2e/test_dot_scaled_cuda.py (msltrans): one tile of `tl.dot_scaled`,
its f32 result rounded to bf16 and stored through the output pointer (which converts it to
that pointer's type, f16 or bf16).

tests/data/cuda/dot_scaled_upstream_inputs.npz holds the inputs upstream test_scaled_dot
generated (torch.manual_seed(0), on CPU) for four of its cases, two of which miss its
tolerance against torch's CPU matmul; keys `<case>__<field>`.
"""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl


@triton.jit
def dot_scaled_tile(a_ptr, a_scale, b_ptr, b_scale, out, M: tl.constexpr, N: tl.constexpr,
                    K: tl.constexpr, FMT_A: tl.constexpr, FMT_B: tl.constexpr):
    ka = tl.arange(0, K)
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * K + ka[None, :])
    b = tl.load(b_ptr + ka[:, None] * N + tl.arange(0, N)[None, :])
    SK: tl.constexpr = K // 32
    if a_scale is not None:
        a_scale = tl.load(a_scale + tl.arange(0, M)[:, None] * SK + tl.arange(0, SK)[None, :])
    if b_scale is not None:
        b_scale = tl.load(b_scale + tl.arange(0, N)[:, None] * SK + tl.arange(0, SK)[None, :])
    c = tl.dot_scaled(a, a_scale, FMT_A, b, b_scale, FMT_B)
    tl.store(out + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c.to(tl.bfloat16))


def cases(data: np.lib.npyio.NpzFile) -> list[str]:
    return sorted({k.split("__")[0] for k in data.files if "__" in k})


def case_args(data: np.lib.npyio.NpzFile, case: str) -> dict:
    """The case's raw arrays (16-bit floats as int16 bit patterns) and constexprs."""
    get = {k.split("__")[1]: data[k] for k in data.files if k.startswith(case + "__")}
    return {"x": get["x"], "y": get["y"], "scale_x": get.get("scale_x"),
            "scale_y": get.get("scale_y"), "M": int(get["M"]), "N": int(get["N"]),
            "K": int(get["K"]), "type_a": str(get["type_a"]), "type_b": str(get["type_b"]),
            "x_dtype": str(get["x_dtype"]), "y_dtype": str(get["y_dtype"]),
            "z_dtype": str(get["z_dtype"])}


def exact(x64: np.ndarray, y64: np.ndarray) -> np.ndarray:
    return x64 @ y64
