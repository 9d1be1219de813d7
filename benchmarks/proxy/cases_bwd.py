"""The GPU proxy's attention backward cases: tests/e2e/workloads' `flash_attn_bwd`, tutorial
06's backward shape (one program: dK, dV of a 128-key block against 32-query steps, then dQ
of a 128-query block against 32-key steps; causal in SLICE-times narrower diagonal steps),
fp16, d64 and d128, causal and not. Timed beside the forward rows of the same run (their
TFLOP/s ratio is the table's figure); no hand kernel. Inputs: Q, K (pre-scaled by
sm_scale / ln 2, as the kernel's caller passes it), V, dO random; the row statistic (base-2
log-sum-exp of Q Kᵀ, causal-masked) computed from them so that P = exp2(Q Kᵀ - lse) is a
softmax; delta (rowsum(O * dO)) random, any value giving one well-defined result.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

LN2 = 0.6931471824645996  # the kernel's constexpr
RCP_LN2 = 1.4426950408889634
BWD = dict(BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32, SLICE=2)


def _torch_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _prepare(data: dict[str, np.ndarray], d: int, causal: bool) -> None:
    import torch

    dev = _torch_device()
    data["k"] = (data["k"].astype(np.float32) * np.float32(d ** -0.5 * RCP_LN2)) \
        .astype(np.float16)
    q = torch.from_numpy(data["q"]).to(dev).float()
    k = torch.from_numpy(data["k"]).to(dev).float()
    n = q.shape[1]
    hidden = torch.ones(n, n, dtype=torch.bool, device=dev).triu(1) if causal else None
    lse = torch.empty(q.shape[:2], dtype=torch.float32, device=dev)
    for h in range(q.shape[0]):
        s = q[h] @ k[h].T
        if hidden is not None:
            s = s.masked_fill(hidden, float("-inf"))
        lse[h] = torch.logsumexp(s * LN2, dim=-1) * RCP_LN2
    data["lse"] = lse.cpu().numpy()
    data["delta"] = (data["delta"] * np.float32(0.1)).astype(np.float32)


def _ref(t: dict[str, Any], d: int, causal: bool) -> dict[str, Any]:
    """The kernel's math in float64: P = exp2(Q Kᵀ - lse), dV = Pᵀ dO, dS = P (dO Vᵀ - delta),
    dK = dSᵀ Q · sm_scale, dQ = dS K · ln 2 (K as passed, pre-scaled)."""
    import torch

    def f64(x: Any) -> Any:
        return (x if isinstance(x, torch.Tensor) else torch.from_numpy(x)).double()

    q, k, v, do = (f64(t[x]) for x in ("q", "k", "v", "do"))
    lse, delta = f64(t["lse"]), f64(t["delta"])
    n = q.shape[1]
    hidden = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1) if causal else None
    out = {x: torch.empty_like(q) for x in ("dq", "dk", "dv")}
    for h in range(q.shape[0]):
        p = torch.exp2(q[h] @ k[h].T - lse[h][:, None])
        if hidden is not None:
            p = p.masked_fill(hidden, 0.0)
        ds = p * (do[h] @ v[h].T - delta[h][:, None])
        out["dv"][h] = p.T @ do[h]
        out["dk"][h] = ds.T @ q[h] * d ** -0.5
        out["dq"][h] = ds @ k[h] * LN2
    return out


def attn_bwd_cases() -> list[Any]:
    from benchmarks.proxy.case_types import Case, Launch, Size

    def size(z: int, h: int, n: int, d: int, causal: bool) -> Size:
        heads = z * h
        launch = Launch(
            (n // BWD["BLOCK_N1"], 1, heads),
            {"q_ptr": "q", "k_ptr": "k", "v_ptr": "v", "sm_scale": d ** -0.5, "do_ptr": "do",
             "dq_ptr": "dq", "dk_ptr": "dk", "dv_ptr": "dv", "lse_ptr": "lse",
             "delta_ptr": "delta", "stride_z": h * n * d, "stride_h": n * d, "stride_tok": d,
             "stride_d": 1, "H": h, "N_CTX": n},
            {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "sm_scale": "fp32",
             "do_ptr": "*fp16", "dq_ptr": "*fp16", "dk_ptr": "*fp16", "dv_ptr": "*fp16",
             "lse_ptr": "*fp32", "delta_ptr": "*fp32", "stride_z": "i32", "stride_h": "i32",
             "stride_tok": "i32", "stride_d": "i32", "H": "i32", "N_CTX": "i32"},
            {**BWD, "HEAD_DIM": d, "CAUSAL": causal}, 4)
        inputs = {x: ("*fp16", (heads, n, d)) for x in ("q", "k", "v", "do", "dq", "dk", "dv")}
        inputs.update({"lse": ("*fp32", (heads, n)), "delta": ("*fp32", (heads, n))})
        # tutorial 06's count: 2.5 times the forward's two products
        flops = 2.5 * 4.0 * heads * n * n * d * (0.5 if causal else 1.0)
        return Size(inputs, ("dq", "dk", "dv"), launch, None, flops,
                    prepare=partial(_prepare, d=d, causal=causal))

    out = []
    for d in (64, 128):
        for causal in (False, True):
            name = f"tutorial-06 attention bwd fp16 d{d}{' causal' if causal else ''} 32x4096"
            # exp2 and fp16 rounding of P and dS: the simulator and CUDA differ by ulps
            out.append(Case(name, "flash_attn_bwd", "TFLOP/s", size(2, 2, 256, d, causal),
                            size(4, 8, 4096, d, causal), False,
                            partial(_ref, d=d, causal=causal), 1e-2,
                            "timed; TFLOP/s ratio to the forward of the same run"))
    return out
