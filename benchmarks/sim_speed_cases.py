"""The kernels benchmarks/sim_speed.py times: the project's own kernels for the workloads of
Triton's tutorials 01, 02, 05 and 06 (examples/vector_add.py, msltrans/workloads) and the
ieee matmul of msltrans/workloads/dot_kernels.py, on the same inputs for every engine (the CPU Metal
simulator and `TRITON_INTERPRET=1`).

Each case builds its inputs once (seeded), runs the kernel(s) once per call, and checks
the result against torch (a wrong result must never be timed as a fast one).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import triton

from examples.vector_add import vector_add_kernel
from msltrans.workloads.attention import attn_forward, inputs, reference
from msltrans.workloads.dot_kernels import matmul_f32_kernel
from msltrans.workloads.softmax_layernorm import (
    layer_norm_bwd_dx_rows,
    layer_norm_bwd_sum_groups,
    layer_norm_fwd_rows,
    row_softmax_kernel,
)

Case = tuple[Callable[[], None], Callable[[], None]]   # (run once, check the last run)


def vector_add() -> Case:
    n = 1 << 20
    gen = torch.Generator().manual_seed(0)
    x, y = torch.rand(n, generator=gen), torch.rand(n, generator=gen)
    out = torch.empty(n)

    def run() -> None:
        vector_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)

    def check() -> None:
        assert torch.equal(out, x + y)

    return run, check


def softmax() -> Case:
    rows, cols = 128, 781
    x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(0))
    y = torch.empty_like(x)

    def run() -> None:
        row_softmax_kernel[(rows,)](y, x, x.stride(0), y.stride(0), rows, cols,
                                    BLOCK=triton.next_power_of_2(cols), STAGES=1, num_warps=8)

    def check() -> None:
        torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-7)

    return run, check


def matmul() -> Case:
    size = 256
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(size, size, generator=gen), torch.randn(size, size, generator=gen)
    c = torch.empty(size, size)

    def run() -> None:
        grid = (triton.cdiv(size, 64) * triton.cdiv(size, 64),)
        matmul_f32_kernel[grid](a, b, c, size, size, size, a.stride(0), a.stride(1),
                                b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                BM=64, BN=64, BK=32, GROUP_M=8)

    def check() -> None:
        ref = a.double() @ b.double()
        assert (c.double() - ref).abs().max().item() < 1e-3

    return run, check


def layer_norm() -> Case:
    """Layer norm forward, then backward (dx with the per-group spin locks, then dw/db)."""
    m, n, group, eps = 128, 1024, 16, 1e-5
    gen = torch.Generator().manual_seed(1)
    x = -2.3 + 0.5 * torch.randn(m, n, generator=gen)
    w, b = torch.rand(n, generator=gen), torch.rand(n, generator=gen)
    dy = 0.1 * torch.randn(m, n, generator=gen)
    y, mean, rstd = torch.empty_like(x), torch.empty(m), torch.empty(m)
    dx = torch.empty_like(x)
    part_dw, part_db = torch.empty(group, n), torch.empty(group, n)
    locks = torch.empty(2 * group, dtype=torch.int32)
    dw, db = torch.empty(n), torch.empty(n)

    def run() -> None:
        layer_norm_fwd_rows[(m,)](x, y, w, b, mean, rstd, x.stride(0), n, eps, BLOCK=1024,
                                  num_warps=8)
        locks.zero_()
        layer_norm_bwd_dx_rows[(m,)](dx, dy, part_dw, part_db, x, w, mean, rstd, locks,
                                     x.stride(0), n, GROUPS=group, BLOCK_N=1024, num_warps=8)
        layer_norm_bwd_sum_groups[(triton.cdiv(n, 128),)](part_dw, part_db, dw, db, group, n,
                                                          BLOCK_G=32, BLOCK_N=128)

    def check() -> None:
        xt, wt, bt = (t.clone().requires_grad_(True) for t in (x, w, b))
        ref = torch.nn.functional.layer_norm(xt, (n,), wt, bt, eps)
        ref.backward(dy)
        torch.testing.assert_close(y, ref.detach(), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(dx, xt.grad, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(dw, wt.grad, rtol=1e-4, atol=1e-3)
        torch.testing.assert_close(db, bt.grad, rtol=1e-4, atol=1e-3)

    return run, check


def attention() -> Case:
    """FlashAttention forward (tutorial 06's workload): batch 1, heads 2, N 1024, d 64, fp16,
    causal."""
    q, k, v = inputs(1, 2, 1024, 64)
    result: list[torch.Tensor] = []

    def run() -> None:
        result[:] = attn_forward(q, k, v, True, 0.5, 128, 64, 4)

    def check() -> None:
        o_ref, _, _ = reference(q, k, v, True, 0.5)
        err = (result[0].double() - o_ref.detach()).abs().max().item()
        assert err <= 2.0**-11 * (v.abs().max().item() + o_ref.abs().max().item()) + 1e-4, err

    return run, check


CASES: dict[str, tuple[str, Callable[[], Case]]] = {
    "vector_add": ("vector add 1M fp32 (tutorial 01)", vector_add),
    "softmax": ("softmax 128x781 fp32 (tutorial 02)", softmax),
    "matmul": ("matmul 256^3 fp32 ieee, 64x64x32 tiles", matmul),
    "layer_norm": ("layer norm fwd+bwd 128x1024 fp32 (tutorial 05)", layer_norm),
    "attention": ("attention fwd 1x2x1024x64 fp16 causal (tutorial 06)", attention),
}
