"""pytest plugin for `scripts/run_inductor_tests.py`: names a PyTorch test tree imports that
the installed torch lacks (tree/release skew), added before the test modules import.

Each shim only makes the import succeed; a test that calls one fails with the message below,
which `classify.py` counts as a test assumption (version skew), not as a result of msltrans.
"""

from __future__ import annotations

import unittest
from typing import Any

SKEW = "tree/release skew: the installed torch has no "
# (module, name) this plugin adds when the installed torch lacks them
SHIMS = (("torch.testing._internal.triton_utils", "requires_cuda"),
         ("torch._inductor.compile_fx", "complex_memory_overlap"))


def _missing(name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(SKEW + name)

    return call


def pytest_configure(config: Any) -> None:
    import torch._inductor.compile_fx as compile_fx
    import torch.testing._internal.triton_utils as triton_utils

    if not hasattr(triton_utils, "requires_cuda"):
        # the tree's name for a skip-unless-CUDA decorator
        triton_utils.requires_cuda = unittest.skipUnless(
            getattr(triton_utils, "HAS_CUDA", False), "requires cuda")
    if not hasattr(compile_fx, "complex_memory_overlap"):
        compile_fx.complex_memory_overlap = _missing("torch._inductor.compile_fx."
                                                     "complex_memory_overlap")
