#!/usr/bin/env python3
"""Which side is wrong when a Liger test's torch-CPU reference and msltrans disagree?

    <venv>/bin/python scripts/conformance/liger_vs_float64.py --liger-src <liger-src> \
        [--cases geglu cross_entropy_bf16 ...]

Liger's tests compare its kernels with torch on the same device. Here that device is the CPU,
whose bf16 layer_norm backward, fp32 and bf16 cross-entropy (reduction="sum") and bf16
gelu_tanh backward (the GEGLU MLP) round differently from CUDA's, and whose fp16
cross-entropy (reduction="mean") sums 8192 row losses in fp16 and overflows to inf. For each
case a failing test ran, set up as the test sets it up, this script computes the same loss
three ways — torch on the CPU in the test's dtype (the test's
reference), Liger's kernels through msltrans, and torch in float64 — and prints each side's
largest error against float64 and whether each side passes the test's own tolerance against
float64. `classify.py` files a failure as test-assumes only for cases this script shows
msltrans to be the closer one.
"""

from __future__ import annotations

import argparse
import os
import sys
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


def _z_loss_reference(logits: torch.Tensor, target: torch.Tensor, ls: float, ignore: int,
                      lsq: float) -> torch.Tensor:
    """Liger's test reference (CrossEntropyWithZLoss, reduction="sum"), in `logits`' dtype."""
    ce = F.cross_entropy(logits, target, reduction="sum", label_smoothing=ls,
                         ignore_index=ignore)
    lse = torch.logsumexp(logits, -1)
    return ce + torch.where(target != ignore, lsq * lse**2, 0.0).sum()


def _seed(seed0: bool) -> None:
    """As the tests seed: Liger's conftest calls set_seed(42), some tests re-seed 0."""
    from test.utils import set_seed

    set_seed(42)
    if seed0:
        torch.manual_seed(0)


def _inputs(bt: int, v: int, ignore: int, seed0: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The test's logits and targets (with some targets set to `ignore`)."""
    _seed(seed0)
    x = torch.randn(bt, v)
    target = torch.randint(0, v, (bt,))
    n = int(torch.randint(1, bt // 2, (1,)).item())
    target[torch.randperm(bt)[:n]] = ignore
    return x, target


def cross_entropy_rows() -> list[Row]:
    """The fp32 reduction="sum" cases that failed, each set up as its test sets it up."""
    from liger_kernel.transformers.cross_entropy import LigerCrossEntropyLoss

    rows = []
    v = 32000
    # test_correctness_with_z_loss_with_other_params_once: (B, T, ls, ignore, lsq, z, rtol)
    # test_correctness_not_last_layer_with_other_params: softcap given, grad_output random x 3
    cases = [("z_loss", b, t, 0.2, -42, lsq, None, z, rtol)
             for b, t in ((3, 423), (2, 4096))
             for lsq, z, rtol in ((1e-4, True, 1e-6), (1e-5, False, 1e-6))]
    cases += [("not_last_layer", b, t, ls, ignore, lsq, softcap, False, 1e-5)
              for b, t in ((3, 423), (2, 1024))
              for ignore, lsq, ls, softcap in ((-100, 1e-4, 0.1, 30.0), (42, 1e-5, 0.2, 40.0))]
    for test, b, t, ls, ignore, lsq, softcap, z, rtol in cases:
        x, target = _inputs(b * t, v, ignore, seed0=test == "z_loss")
        lig = LigerCrossEntropyLoss(lse_square_scale=lsq, label_smoothing=ls,
                                    ignore_index=ignore, reduction="sum", softcap=softcap,
                                    return_z_loss=z)
        xs = [x.clone().requires_grad_(True), x.clone().requires_grad_(True),
              x.double().requires_grad_(True)]
        outs = []
        for i, xi in enumerate(xs):
            if i == 1:
                out = lig(xi, target)
                outs.append(out.loss if z else out)
                continue
            logits = xi if softcap is None else softcap * torch.tanh(xi / softcap)
            outs.append(_z_loss_reference(logits, target, ls, ignore, lsq))
        grad = torch.rand_like(outs[0]) if test == "not_last_layer" else torch.ones(())
        for out in outs:
            (out * 3 if test == "not_last_layer" else out).backward(grad.to(out.dtype))
        case = (f"cross_entropy fp32 sum {b}-{t}-{v} {test} ls={ls} ignore={ignore} "
                f"lsq={lsq} softcap={softcap}")
        rows.append(_row(case, "dX", xs[0].grad, xs[1].grad, xs[2].grad, 1e-8, rtol))
    return rows


def _ce_bf16_case(test: str, reduction: str, b: int, t: int, ignore: int | None) -> list[Row]:
    """One bf16 cross-entropy case as its test sets it up: test_correctness (re-seeds 0,
    dy = 1), test_correctness_not_last_layer (loss * 3, dy = rand),
    test_correctness_with_ignore_index (some targets set to `ignore`) or
    test_correctness_with_weight_once (class weights rand(V), then re-seeds 0). Rows are
    independent in a cross-entropy, so float64 runs in row chunks (8192 x 32000 fits)."""
    from liger_kernel.transformers.cross_entropy import LigerCrossEntropyLoss

    v = 32000
    kw: dict = {"reduction": reduction}
    _seed(test == "correctness")
    if test == "weight":
        kw["weight"] = torch.rand(v, dtype=torch.bfloat16)
        torch.manual_seed(0)
    x = torch.randn(b * t, v, dtype=torch.bfloat16)
    target = torch.randint(0, v, (b * t,))
    if ignore is not None:
        n = int(torch.randint(1, b * t // 2, (1,)).item())
        target[torch.randperm(b * t)[:n]] = ignore
        kw["ignore_index"] = ignore
    xs = [x.clone().requires_grad_(True), x.clone().requires_grad_(True)]
    outs = [F.cross_entropy(xs[0], target, **kw), LigerCrossEntropyLoss(**kw)(xs[1], target)]
    grad = torch.rand_like(outs[0]) if test == "not_last_layer" else torch.ones_like(outs[0])
    scale = 3.0 if test == "not_last_layer" else 1.0
    for out in outs:
        (out * scale).backward(grad)
    loss64, dx64 = [], torch.empty(b * t, v, dtype=torch.float64)
    for r in range(0, b * t, 512):
        xc = x[r:r + 512].double().requires_grad_(True)
        kw64 = {**kw, "reduction": "none"}
        if "weight" in kw:
            kw64["weight"] = kw["weight"].double()
        lc = F.cross_entropy(xc, target[r:r + 512], **kw64)
        gc = grad.double() if reduction == "sum" else grad[r:r + 512].double()
        (lc * scale).backward(gc.expand_as(lc))
        loss64.append(lc.detach())
        dx64[r:r + 512] = xc.grad
    full = torch.cat(loss64)
    exact = full.sum() if reduction == "sum" else full
    name = f"cross_entropy bf16 {reduction} {b}-{t}-{v} {test}" + (
        f" ignore={ignore}" if ignore is not None else "")
    return [_row(name, "loss", outs[0].detach(), outs[1].detach(), exact, 1e-8, 5e-2),
            _row(name, "dX", xs[0].grad, xs[1].grad, dx64, 1e-8, 5e-2)]


def cross_entropy_bf16_rows(shapes: tuple[tuple[int, int, int], ...] = ((3, 423, -123),
                                                                     (2, 4096, 2))
                            ) -> list[Row]:
    """The bf16 (dtype0) cross-entropy cases that failed: reductions "sum" and "none", both
    shapes, plain, with ignored targets, with class weights, and scaled (not_last_layer)."""
    cases = [(test, reduction, b, t, ignore)
             for b, t, ignore in shapes
             for test, reduction in (("correctness", "sum"), ("correctness", "none"),
                                     ("ignore_index", "sum"), ("ignore_index", "none"),
                                     ("weight", "sum"), ("weight", "none"),
                                     ("not_last_layer", "sum"))]
    return [r for test, reduction, b, t, ignore in cases
            for r in _ce_bf16_case(test, reduction, b, t,
                                   ignore if test == "ignore_index" else None)]


def forward_only_rows() -> list[Row]:
    """test_correctness_with_forward_only, fp16, mean over 8192 rows: torch-CPU sums in fp16."""
    from liger_kernel.transformers.cross_entropy import LigerCrossEntropyLoss

    b, t, v = 2, 4096, 32000
    _seed(seed0=True)
    x = torch.randn(b * t, v, dtype=torch.float16)
    target = torch.randint(0, v, (b * t,))
    with torch.no_grad():
        ref = F.cross_entropy(x, target)
        ours = LigerCrossEntropyLoss(reduction="mean")(x.clone(), target)
        exact = F.cross_entropy(x.double(), target)
    return [_row(f"cross_entropy fp16 mean {b}-{t}-{v} forward_only", "loss", ref, ours, exact,
                 1e-2, 1e-2)]


def geglu_rows() -> list[Row]:
    """test_geglu.py::test_correctness, bf16, (2, 2048, 2048, 4096): LlamaMLP (gelu_tanh) on
    torch-CPU against LigerGEGLUMLP, forward y and the four gradients, as the test sets it up;
    float64 runs the same MLP from the same bf16 inputs, weights and dy."""
    from liger_kernel.transformers.geglu import LigerGEGLUMLP
    from transformers.models.llama.configuration_llama import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaMLP

    config = LlamaConfig(hidden_size=4096, intermediate_size=11008,
                         hidden_act="gelu_pytorch_tanh")
    b, t, hid, inter, dtype = 2, 2048, 2048, 4096, torch.bfloat16
    _seed(seed0=False)
    x = torch.randn(b, t, hid, dtype=dtype)
    w = {k: torch.randn(shape, dtype=dtype) for k, shape in
         (("gate", (hid, inter)), ("up", (hid, inter)), ("down", (inter, hid)))}
    def weighted(m: torch.nn.Module) -> torch.nn.Module:
        for k in w:
            getattr(m, f"{k}_proj").weight.data = w[k].T.to(m.down_proj.weight.dtype)
        return m

    mlps = [weighted(LlamaMLP(config=config).to(dtype)),
            weighted(LigerGEGLUMLP(config=config).to(dtype))]
    xs = [x.clone().requires_grad_(True), x.clone().requires_grad_(True)]
    ys = [m(xi) for m, xi in zip(mlps, xs, strict=True)]
    dy = torch.randn_like(ys[0])  # drawn where the test draws it
    mlps.append(weighted(LlamaMLP(config=config).double()))
    xs.append(x.double().requires_grad_(True))
    ys.append(mlps[2](xs[2]))
    for y in ys:
        y.backward(dy.to(y.dtype).clone())
    case = f"geglu bf16 {b}-{t}-{hid}-{inter}"
    rows = [_row(case, "y", ys[0].detach(), ys[1].detach(), ys[2].detach(), 1e-2, 1e-2)]
    for k in w:
        g = [getattr(m, f"{k}_proj").weight.grad for m in mlps]
        rows.append(_row(case, f"{k}_proj.weight.grad", g[0], g[1], g[2], 1e-2, 1e-2))
    rows.append(_row(case, "x.grad", xs[0].grad, xs[1].grad, xs[2].grad, 1e-2, 1e-2))
    # The elementwise op Liger replaces, on the same bf16 gate, up and incoming gradient:
    # torch-CPU's gelu_tanh(gate) * up and its autograd, Liger's kernels, float64.
    from liger_kernel.ops import LigerGELUMulFunction

    with torch.no_grad():
        gate, up = mlps[0].gate_proj(x), mlps[0].up_proj(x)
        dh = dy @ w["down"].T
    leaves = [(gate.clone().requires_grad_(True), up.clone().requires_grad_(True))
              for _ in range(2)]
    leaves.append((gate.double().requires_grad_(True), up.double().requires_grad_(True)))
    hs = [mlps[0].act_fn(leaves[0][0]) * leaves[0][1],
          LigerGELUMulFunction.apply(*leaves[1]),
          torch.nn.functional.gelu(leaves[2][0], approximate="tanh") * leaves[2][1]]
    for h in hs:
        h.backward(dh.to(h.dtype))
    rows.append(_row(case, "gelu_tanh(gate)*up", hs[0].detach(), hs[1].detach(),
                     hs[2].detach(), 1e-2, 1e-2))
    for i, name in ((0, "d gate"), (1, "d up")):
        rows.append(_row(case, name, leaves[0][i].grad, leaves[1][i].grad, leaves[2][i].grad,
                         1e-2, 1e-2))
    return rows


CASES = {"layer_norm": layer_norm_rows, "forward_only": forward_only_rows,
         "cross_entropy": cross_entropy_rows, "cross_entropy_bf16": cross_entropy_bf16_rows,
         "cross_entropy_bf16_small": lambda: cross_entropy_bf16_rows(((3, 423, -123),)),
         "cross_entropy_bf16_large": lambda: cross_entropy_bf16_rows(((2, 4096, 2),)),
         "geglu": geglu_rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--liger-src", type=Path, required=True, help="Liger-Kernel checkout")
    p.add_argument("--cases", nargs="+", choices=sorted(CASES),
                   default=["layer_norm", "forward_only", "cross_entropy", "cross_entropy_bf16",
                            "geglu"],
                   help="which failing cases to recompute (default: all; cross_entropy_bf16 "
                        "is cross_entropy_bf16_small + _large, 3x423 and 2x4096 rows)")
    args = p.parse_args(argv)
    src = args.liger_src.resolve()
    # liger_kernel and test.utils (its seeding) come from the checkout: first on PYTHONPATH,
    # as the runners give it to their pytest child; this process re-runs itself so once.
    paths = [str(src / "src"), str(src)]
    if os.environ.get("PYTHONPATH", "").split(os.pathsep)[:2] != paths:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [*paths, *filter(None, [os.environ.get("PYTHONPATH")])]))
        os.execve(sys.executable, [sys.executable, __file__, *(argv or sys.argv[1:])], env)
    print("| case | tensor | torch-CPU max err vs f64 | msltrans max err vs f64 | "
          "torch-CPU within tol | msltrans within tol |")
    print("|---|---|---:|---:|---|---|")
    rows = [r for name in args.cases for r in CASES[name]()]
    for case, name, e_ref, e_ours, ok_ref, ok_ours in rows:
        print(f"| {case} | {name} | {e_ref:.3g} | {e_ours:.3g} | {ok_ref} | {ok_ours} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
