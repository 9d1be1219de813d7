#!/usr/bin/env python3
"""Which side is wrong when a Liger test's torch-CPU reference and msltrans disagree?

    /tmp/ligervenv/bin/python scripts/conformance/liger_vs_float64.py --liger-src /work/liger

Liger's tests compare its kernels with torch on the same device. Here that device is the CPU,
whose bf16 layer_norm backward and fp32 cross-entropy (reduction="sum") round differently from
CUDA's. For each case a failing test ran, this script computes the same loss three ways — torch
on the CPU in the test's dtype (the test's reference), Liger's kernels through msltrans, and
torch in float64 — and prints each side's largest error against float64 and whether each side
passes the test's own tolerance against float64. `classify.py` files a failure as test-assumes
only for cases this script shows msltrans to be the closer one.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

Row = tuple[str, str, float, float, bool, bool]


def _row(case: str, name: str, ref: torch.Tensor, ours: torch.Tensor, f64: torch.Tensor,
         atol: float, rtol: float) -> Row:
    err_ref = (ref.double() - f64).abs().max().item()
    err_ours = (ours.double() - f64).abs().max().item()
    exact = f64.to(ours.dtype)
    return (case, name, err_ref, err_ours, torch.allclose(ref, exact, atol=atol, rtol=rtol),
            torch.allclose(ours, exact, atol=atol, rtol=rtol))


def layer_norm_rows() -> list[Row]:
    from liger_kernel.transformers.layer_norm import LigerLayerNorm

    rows = []
    for b, t, h in ((2, 8, 64), (3, 7, 256)):
        torch.manual_seed(0)
        dtype = torch.bfloat16
        x = torch.randn(b, t, h, dtype=dtype)
        lig = LigerLayerNorm(h, eps=1e-6).to(dtype)
        ref = torch.nn.LayerNorm(h, eps=1e-6).to(dtype)
        exact = torch.nn.LayerNorm(h, eps=1e-6).double()
        with torch.no_grad():
            for m in (ref, exact):
                m.weight.copy_(lig.weight)
                m.bias.copy_(lig.bias)
        xs = [x.clone().requires_grad_(True), x.clone().requires_grad_(True),
              x.double().requires_grad_(True)]
        dy = torch.randn_like(x)
        for m, xi in zip((ref, lig, exact), xs, strict=True):
            m(xi).backward(dy.to(xi.dtype))
        case = f"layer_norm bf16 {b}-{t}-{h}"
        rows.append(_row(case, "dW", ref.weight.grad, lig.weight.grad, exact.weight.grad,
                         2e-2, 2e-2))
        rows.append(_row(case, "dB", ref.bias.grad, lig.bias.grad, exact.bias.grad, 2e-2, 2e-2))
    return rows


def cross_entropy_rows() -> list[Row]:
    from liger_kernel.transformers.cross_entropy import LigerCrossEntropyLoss

    rows = []
    b, t, v = 3, 423, 32000
    # (label smoothing, ignore index, z-loss scale, softcap, rtol): the failing sum-reduction cases
    for ls, ignore, lsq, softcap, rtol in ((0.2, -42, 1e-5, None, 1e-6),
                                           (0.2, 42, 1e-5, 40.0, 1e-5)):
        torch.manual_seed(0)
        x = torch.randn(b * t, v)
        target = torch.randint(0, v, (b * t,))
        n = int(torch.randint(1, b * t // 2, (1,)).item())
        target[torch.randperm(b * t)[:n]] = ignore

        def loss(logits: torch.Tensor, ls: float = ls, ignore: int = ignore, lsq: float = lsq,
                 softcap: float | None = softcap, target: torch.Tensor = target) -> torch.Tensor:
            if softcap is not None:
                logits = softcap * torch.tanh(logits / softcap)
            ce = F.cross_entropy(logits, target, reduction="sum", label_smoothing=ls,
                                 ignore_index=ignore)
            lse = torch.logsumexp(logits, -1)
            return ce + torch.where(target != ignore, lsq * lse**2, 0.0).sum()

        lig = LigerCrossEntropyLoss(lse_square_scale=lsq, label_smoothing=ls,
                                    ignore_index=ignore, reduction="sum", softcap=softcap)
        fns: tuple[Callable[[torch.Tensor], torch.Tensor], ...] = (
            loss, lambda xi, lig=lig, target=target: lig(xi, target), loss)
        xs = [x.clone().requires_grad_(True), x.clone().requires_grad_(True),
              x.double().requires_grad_(True)]
        for fn, xi in zip(fns, xs, strict=True):
            fn(xi).backward()
        case = f"cross_entropy fp32 sum {b}-{t}-{v} ls={ls} softcap={softcap}"
        rows.append(_row(case, "dX", xs[0].grad, xs[1].grad, xs[2].grad, 1e-8, rtol))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--liger-src", type=Path, required=True, help="Liger-Kernel checkout")
    args = p.parse_args(argv)
    sys.path.insert(0, str(args.liger_src.resolve() / "src"))
    print("| case | tensor | torch-CPU max err vs f64 | msltrans max err vs f64 | "
          "torch-CPU within tol | msltrans within tol |")
    print("|---|---|---:|---:|---|---|")
    for case, name, e_ref, e_ours, ok_ref, ok_ours in layer_norm_rows() + cross_entropy_rows():
        print(f"| {case} | {name} | {e_ref:.3g} | {e_ours:.3g} | {ok_ref} | {ok_ours} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
