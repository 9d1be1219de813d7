"""torch.compile through msltrans on the model suite (tests/inductor/models_*.py): each model
compiled with Inductor's Triton backend for CPU tensors, run on the simulator and compared
with eager float64 (bound: tests/inductor/harness.py), with at least one Triton kernel run
through msltrans. Forward in float32 and bfloat16, a training step (forward and backward
compiled; loss and every gradient compared), dynamic shapes (two batch sizes through one
compiled graph) and max-autotune with Triton matmul templates. `FAST` runs in CI; the
whole matrix is marked slow (pytest -m slow tests/inductor).
"""

from __future__ import annotations

import pytest
import torch

from tests.inductor import harness
from tests.inductor.models import ALL

FAST = {
    "fp32": ("mlp_elu", "softplus_mish_logsigmoid", "lstm_cell", "gpt2_block", "llama_block",
             "resnet_block", "cross_entropy_head", "log_space_scan", "count_likelihood",
             "probit_head", "polar_features", "block_float_quantizer"),
    "bf16": ("mlp_gelu", "llama_block"),
    "dynamic": ("rmsnorm", "embedding_front_end"),
    "train": ("mlp_gelu", "gpt2_block", "bce_focal_head"),
    "max_autotune": ("mlp_gelu",),
}
pytestmark = pytest.mark.usefixtures("inductor_route")


def cases(mode: str, keep: bool = True) -> list:
    out = []
    for name, model in ALL.items():
        if mode == "bf16" and not model.bf16 or mode == "train" and not model.train:
            continue
        fast = name in FAST[mode]
        if keep or not fast:
            marks = () if fast else (pytest.mark.slow,)
            out.append(pytest.param(name, marks=marks, id=name))
    return out


def test_suite_size() -> None:
    assert len(ALL) >= 30


@pytest.mark.parametrize("name", cases("fp32"))
def test_forward_fp32(name: str) -> None:
    harness.forward(ALL[name]).check(torch.float32, f"{name} fp32")


@pytest.mark.parametrize("name", cases("bf16"))
def test_forward_bf16(name: str) -> None:
    harness.forward(ALL[name], torch.bfloat16).check(torch.bfloat16, f"{name} bf16")


@pytest.mark.parametrize("name", cases("dynamic"))
def test_forward_dynamic_shapes(name: str) -> None:
    harness.forward(ALL[name], dynamic=True).check(torch.float32, f"{name} dynamic")


@pytest.mark.parametrize("name", cases("train"))
def test_training_step(name: str) -> None:
    harness.training_step(ALL[name]).check(torch.float32, f"{name} training step")


@pytest.mark.parametrize("name", cases("max_autotune"))
def test_forward_max_autotune(name: str) -> None:
    harness.forward(ALL[name], max_autotune=True).check(torch.float32, f"{name} max-autotune")
