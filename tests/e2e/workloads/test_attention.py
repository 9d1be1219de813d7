"""FlashAttention-2 forward and backward through the Metal driver: the kernels of
msltrans/workloads/attention.py (the workload of Triton's tutorial 06, whose own file,
`test_op` included, runs unmodified out of tree through scripts/run_tutorials.py).

Reference: float64 torch, `softmax(Q Kᵀ · sm_scale) V` (causal: `-inf` above the diagonal) and
its autograd gradients. Error bounds (fp16 inputs, stated per test):
- forward output: the kernel rounds P to fp16 before `P·V` (relative 2⁻¹¹ per term, so at most
  2⁻¹¹·max|V| after normalisation) and the output to fp16 (2⁻¹¹·max|O|): we assert
  |O − O_ref| ≤ 2⁻¹¹·(max|V| + max|O_ref|) + 1e-4 (the 1e-4 covers fp32 exp2/accumulation);
- the row statistic M (log2-sum-exp2 of the scaled scores) to 2e-6·(1 + |M|) (fp32 exp2/log2);
- backward dQ, dK, dV: dS and P are rounded to fp16 before each dot; asserted within atol
  1e-2 against float64 (the tutorial's tolerance, whose reference is itself fp16).
"""

from __future__ import annotations

import pytest
import torch
from triton.runtime.driver import driver

from msltrans.errors import MetalNonRecoverableError
from msltrans.workloads.attention import attn_backward, attn_forward, inputs, reference


@pytest.fixture(autouse=True)
def sim_driver():
    active = driver.active
    if type(active).__name__ != "MetalDriver" or active.engine_name != "sim":
        pytest.skip("needs the Metal driver on the simulator engine")
    return active


def forward_bound(v: torch.Tensor, o_ref: torch.Tensor) -> float:
    return 2.0**-11 * (v.abs().max().item() + o_ref.abs().max().item()) + 1e-4


# ---- tests -------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("Z, H, N_CTX, HEAD_DIM, BLOCK_M, BLOCK_N, num_warps, std", [
    (1, 2, 64, 16, 32, 16, 4, 0.5),
    (2, 3, 128, 64, 128, 64, 4, 0.5),  # the tutorial's pytest config (BLOCK_M=128, BLOCK_N=64)
    (1, 1, 256, 32, 64, 32, 8, 2.0),  # large scores: the online max/rescale must hold up
])
def test_forward_matches_float64(Z, H, N_CTX, HEAD_DIM, BLOCK_M, BLOCK_N, num_warps, std, causal):
    q, k, v = inputs(Z, H, N_CTX, HEAD_DIM, std)
    sm_scale = 0.5
    o, M = attn_forward(q, k, v, causal, sm_scale, BLOCK_M, BLOCK_N, num_warps)
    o_ref, m_ref, _ = reference(q, k, v, causal, sm_scale)
    assert o.dtype == torch.float16 and torch.isfinite(o).all()
    err = (o.double() - o_ref.detach()).abs().max().item()
    assert err <= forward_bound(v, o_ref), err
    m_err = ((M.double() - m_ref) / (1 + m_ref.abs())).abs().max().item()
    assert m_err <= 2e-6, m_err


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("Z, H, HEAD_DIM", [
    (1, 2, 32), (2, 1, 64),
    (1, 1, 128),  # register-path dots: 128x128 fp16 operand conversions in two 16 KB passes
])
def test_backward_matches_float64_autograd(Z, H, HEAD_DIM, causal):
    N_CTX, sm_scale = 128, 0.5
    q, k, v = inputs(Z, H, N_CTX, HEAD_DIM)
    do = torch.empty_like(q).normal_(0.0, 1.0, generator=torch.Generator().manual_seed(7))
    o, M = attn_forward(q, k, v, causal, sm_scale, 64, min(64, HEAD_DIM))
    dq, dk, dv = attn_backward(q, k, v, o, M, do, causal, sm_scale)
    o_ref, _, (q64, k64, v64) = reference(q, k, v, causal, sm_scale)
    o_ref.backward(do.double())
    assert (o.double() - o_ref.detach()).abs().max().item() <= forward_bound(v, o_ref)
    for name, got, ref in (("dq", dq, q64.grad), ("dk", dk, k64.grad), ("dv", dv, v64.grad)):
        assert got.dtype == torch.float16
        err = (got.double() - ref).abs().max().item()
        assert err <= 1e-2, (name, err)
        # and not vacuously: the gradients are far from zero
        assert ref.abs().max().item() > 0.1


def test_causal_differs_from_non_causal():
    # guards the reference comparison: the two stages really take different paths
    q, k, v = inputs(1, 1, 64, 16)
    a, _ = attn_forward(q, k, v, False, 0.5, 32, 16)
    b, _ = attn_forward(q, k, v, True, 0.5, 32, 16)
    assert (a.double() - b.double()).abs().max().item() > 0.05
    # the first query row attends only to key 0 when causal: O[0] == V[0] (to fp16)
    assert torch.equal(b[0, 0, 0], v[0, 0, 0])


def test_fp8_path_is_refused_or_correct():
    """FP8_OUTPUT (e5m2 Q/K/V, V transposed): fp8 tensors have no Metal type today, so the
    launch must refuse with a MetalNonRecoverableError naming the type; should fp8 storage
    land, the output must then be right to fp8 precision (e5m2: 2 mantissa bits)."""
    Z, H, N_CTX, HEAD_DIM = 1, 1, 64, 16
    q, k, v = inputs(Z, H, N_CTX, HEAD_DIM)
    q8, k8 = q.to(torch.float8_e5m2), k.to(torch.float8_e5m2)
    v8 = v.permute(0, 1, 3, 2).contiguous().permute(0, 1, 3, 2).to(torch.float8_e5m2)
    try:
        o, _ = attn_forward(q8, k8, v8, False, 0.5, 32, 16)
    except Exception as exc:  # noqa: BLE001 - a CompilationError wraps the refusal
        cause = exc if isinstance(exc, MetalNonRecoverableError) else exc.__cause__
        assert isinstance(cause, MetalNonRecoverableError), repr(exc)
        assert "f8E5M2" in str(cause) and "Metal" in str(cause)
        return
    o_ref, _, _ = reference(q8.float(), k8.float(), v8.float(), False, 0.5)
    err = (o.double() - o_ref.detach()).abs().max().item()
    assert err <= 2.0**-2 * (v8.float().abs().max().item() + o_ref.abs().max().item()), err
