"""A 2-D elementwise kernel with broadcasting: out[m, n] = x[m, n] * scale[m] + bias[n].

2-D program grid, 2-D tiles masked on both edges, a row vector and a column vector
broadcast against the tile, and a strided (non-contiguous) input. Checked bit-for-bit
against numpy: each output is one fp32 multiply then one add, both correctly rounded. The
launch passes `enable_fp_fusion=False` so the multiply and add stay separate roundings, as
in numpy; with fusion on (Triton's default) they may become one fma().

    python examples/broadcast_2d.py
"""

import numpy as np
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def scale_bias_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, M, N,
                      stride_xm, stride_xn, stride_om,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :] * stride_xn, mask=mask, other=0.0)
    scale = tl.load(scale_ptr + rm, mask=rm < M, other=0.0)
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
    out = x * scale[:, None] + bias[None, :]
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :], out, mask=mask)


def scale_bias(x: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
    scale_bias_kernel[grid](x, scale, bias, out, M, N, x.stride(0), x.stride(1), out.stride(0),
                            BLOCK_M=16, BLOCK_N=64, enable_fp_fusion=False)
    return out


def main() -> None:
    torch.manual_seed(0)
    M, N = 100, 300
    x = torch.randn(N, M, device=DEVICE).t()  # a transposed view: stride_xn != 1
    scale = torch.randn(M, device=DEVICE)
    bias = torch.randn(N, device=DEVICE)
    out = scale_bias(x, scale, bias)
    xs, ss, bs = (t.cpu().numpy() for t in (x, scale, bias))
    expected = xs * ss[:, None] + bs[None, :]  # numpy: separate multiply and add
    got = out.cpu().numpy()
    print(f"engine: {triton.runtime.driver.active.engine_name}, shape {tuple(out.shape)}")
    print(f"max error {np.max(np.abs(got - expected)):g}; "
          f"bit-identical: {got.tobytes() == np.ascontiguousarray(expected).tobytes()}")


if __name__ == "__main__":
    main()
