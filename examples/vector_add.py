"""Add two vectors with a @triton.jit kernel, through msltrans.

On a Mac with an Apple GPU the kernel runs on the GPU (MPS tensors); elsewhere it runs in
msltrans's CPU Metal simulator on CPU tensors. Nothing in this file is Metal-specific: it is
plain Triton, launched the usual way. To see the Metal Shading Language it becomes:

    python examples/vector_add.py
    msltrans dump examples/vector_add.py
"""

import torch
import triton
import triton.language as tl

# Where tensors live for the active Triton driver: "mps" on a Mac, "cpu" on the simulator.
DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def vector_add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Each program instance handles one BLOCK-wide slice of the vectors.
    slice_start = tl.program_id(axis=0) * BLOCK
    idx = slice_start + tl.arange(0, BLOCK)
    # The last slice may run past n: masked lanes neither load nor store.
    in_range = idx < n
    a = tl.load(a_ptr + idx, mask=in_range)
    b = tl.load(b_ptr + idx, mask=in_range)
    tl.store(out_ptr + idx, a + b, mask=in_range)


def vector_add(a: torch.Tensor, b: torch.Tensor, block: int = 1024) -> torch.Tensor:
    out = torch.empty_like(a)
    n = out.numel()
    vector_add_kernel[(triton.cdiv(n, block),)](a, b, out, n, BLOCK=block)
    return out


def main() -> None:
    gen = torch.Generator().manual_seed(0)
    n = 98_432  # not a multiple of the block: the last program is masked
    a = torch.rand(n, generator=gen).to(DEVICE)
    b = torch.rand(n, generator=gen).to(DEVICE)
    expected = a + b
    got = vector_add(a, b)
    print(f"engine: {triton.runtime.driver.active.engine_name}, device: {DEVICE}")
    print("torch: ", expected)
    print("triton:", got)
    # One fp32 add per element has one correctly rounded result: the error must be 0.
    print(f"max error {torch.max(torch.abs(expected - got)).item():g}")


if __name__ == "__main__":
    main()
