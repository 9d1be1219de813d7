"""Run a model eagerly in float64, eagerly in its own dtype and through torch.compile with
msltrans's Inductor route, and measure both errors against float64.

The error of a result is `max|y - ref| / max(max|ref|, 1)` over each output (the largest over
a model's outputs): an error relative to the output's scale, with an absolute floor for
outputs near zero. A compiled result passes when its error is within
`RATIO × (eager error in the same dtype) + FLOOR[dtype]`: the compiled kernels may round in
a different order than aten, but a wrong kernel is off by far more than the rounding of the
dtype (see `bound()`). Every case must also launch at least one Triton kernel through
msltrans (`msltrans.inductor.launches()`): a model that ran only aten kernels proves nothing.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch

import msltrans.inductor

RATIO = 4.0
FLOOR = {torch.float32: 2e-6, torch.bfloat16: 2**-7, torch.float16: 2**-9}

Inputs = tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class Model:
    """A model built from code (random weights, fixed seed) and its inputs."""

    name: str
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[int], Inputs]  # batch size -> inputs (float tensors in float32)
    batch: int = 4
    other_batch: int = 6  # the second shape of a dynamic=True run
    loss: Callable[[Any], torch.Tensor] | None = None  # output -> scalar (default: mean of squares)
    train: bool = True  # has parameters worth a training step
    bf16: bool = True


@dataclasses.dataclass
class Outcome:
    error: float
    eager_error: float
    kernels: dict[str, int]

    def bound(self, dtype: torch.dtype) -> float:
        return RATIO * self.eager_error + FLOOR[dtype]

    def check(self, dtype: torch.dtype, what: str) -> None:
        assert self.kernels, f"{what}: no Triton kernel ran through msltrans (aten only)"
        assert self.error <= self.bound(dtype), (
            f"{what}: compiled error {self.error:.3g} > bound {self.bound(dtype):.3g} "
            f"(eager {dtype} error {self.eager_error:.3g})")


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(dtype)
    if isinstance(value, (tuple, list)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _flatten(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flatten(v)]
    if isinstance(value, dict):
        return [t for k in sorted(value) for t in _flatten(value[k])]
    return []


def error(got: Any, ref: Any) -> float:
    worst = 0.0
    for g, r in zip(_flatten(got), _flatten(ref), strict=True):
        assert g.shape == r.shape, (g.shape, r.shape)
        if not r.is_floating_point():
            assert torch.equal(g.to(r.dtype), r), "integer output differs"
            continue
        g64, r64 = g.detach().to(torch.float64), r.detach().to(torch.float64)
        both_nan = torch.isnan(g64) & torch.isnan(r64)
        same_inf = torch.isinf(r64) & (g64 == r64)
        diff = torch.where(both_nan | same_inf, 0.0, (g64 - r64).abs())
        if torch.isnan(diff).any():
            return float("inf")
        finite = r64[torch.isfinite(r64)]
        scale = max(float(finite.abs().max()) if finite.numel() else 0.0, 1.0)
        worst = max(worst, float(diff.max()) / scale if diff.numel() else 0.0)
    return worst


def _models(model: Model, dtype: torch.dtype) -> tuple[torch.nn.Module, torch.nn.Module]:
    torch.manual_seed(0)
    base = model.build().to(dtype)
    # float64 from the same (dtype-rounded) weights: the reference measures compute error only
    return base, copy.deepcopy(base).to(torch.float64)


def _inputs(model: Model, batch: int, dtype: torch.dtype) -> tuple[Inputs, Inputs]:
    torch.manual_seed(1)
    inputs = _cast(model.inputs(batch), dtype)
    return inputs, _cast(inputs, torch.float64)


def compile_options(max_autotune: bool) -> dict[str, Any]:
    if not max_autotune:
        return {}
    return {"max_autotune": True, "max_autotune_gemm_backends": "TRITON"}


def _compiled(module: torch.nn.Module | Callable[..., Any], dynamic: bool, max_autotune: bool
              ) -> Callable[..., Any]:
    torch._dynamo.reset()
    return torch.compile(module, dynamic=dynamic, options=compile_options(max_autotune))


def forward(model: Model, dtype: torch.dtype = torch.float32, dynamic: bool = False,
            max_autotune: bool = False) -> Outcome:
    """Compiled forward vs float64 (and eager in `dtype` vs float64, for the bound)."""
    module, module64 = _models(model, dtype)
    module.eval()
    module64.eval()
    batches: Sequence[int] = (model.batch, model.other_batch) if dynamic else (model.batch,)
    compiled = _compiled(module, dynamic, max_autotune)
    msltrans.inductor.reset_launches()
    worst, worst_eager = 0.0, 0.0
    with torch.no_grad():
        for batch in batches:
            inputs, inputs64 = _inputs(model, batch, dtype)
            ref = module64(*inputs64)
            worst = max(worst, error(compiled(*inputs), ref))
            worst_eager = max(worst_eager, error(module(*inputs), ref))
    return Outcome(worst, worst_eager, msltrans.inductor.launches())


def _default_loss(out: Any) -> torch.Tensor:
    return sum(t.float().pow(2).mean() if t.dtype != torch.float64 else t.pow(2).mean()
               for t in _flatten(out) if t.is_floating_point())


def _train_step(module: torch.nn.Module, inputs: Inputs, loss_fn: Callable[[Any], torch.Tensor]
                ) -> list[torch.Tensor]:
    module.zero_grad(set_to_none=True)
    loss = loss_fn(module(*inputs))
    loss.backward()
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in module.parameters()]
    return [loss.detach(), *grads]


def training_step(model: Model, dtype: torch.dtype = torch.float32) -> Outcome:
    """Loss and every parameter's gradient of one step: forward and backward compiled."""
    module, module64 = _models(model, dtype)
    module.train()
    module64.train()
    loss_fn = model.loss or _default_loss
    inputs, inputs64 = _inputs(model, model.batch, dtype)
    ref = _train_step(module64, inputs64, loss_fn)
    eager = _train_step(module, inputs, loss_fn)
    compiled_module = copy.deepcopy(module)
    compiled = _compiled(compiled_module, False, False)
    msltrans.inductor.reset_launches()
    compiled_module.zero_grad(set_to_none=True)
    loss = loss_fn(compiled(*inputs))
    loss.backward()
    got = [loss.detach(), *[p.grad if p.grad is not None else torch.zeros_like(p)
                            for p in compiled_module.parameters()]]
    return Outcome(error(got, ref), error(eager, ref), msltrans.inductor.launches())
