"""Fixtures for the torch.compile route: enabled for a test module, disabled afterwards.

Compiles are the cost here: compile workers are off (one process, no pool start-up), and
pointwise kernels are not autotuned (timing candidates on the simulator says nothing about
a GPU). The Triton, Inductor and simulator caches are shared by the session's tests
(Triton's and Inductor's under one temporary folder, the simulator's where the environment
puts it), so a kernel two tests generate is compiled once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def compile_caches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    root = tmp_path_factory.getbasetemp().parent / "msltrans-inductor-caches"
    keys = {"TRITON_CACHE_DIR": root / "triton", "TORCHINDUCTOR_CACHE_DIR": root / "inductor"}
    saved = {k: os.environ.get(k) for k in keys}
    for key, path in keys.items():
        os.environ.setdefault(key, str(path))
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def inductor_route(compile_caches: None) -> Iterator[None]:
    import torch
    import torch._inductor.config as config

    import msltrans.inductor

    saved = {"compile_threads": config.compile_threads,
             "autotune_pointwise": config.triton.autotune_pointwise}
    msltrans.inductor.enable()
    config.compile_threads = 1
    config.triton.autotune_pointwise = False
    yield
    config.compile_threads = saved["compile_threads"]
    config.triton.autotune_pointwise = saved["autotune_pointwise"]
    msltrans.inductor.disable()
    torch._dynamo.reset()
