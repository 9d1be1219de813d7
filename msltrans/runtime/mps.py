"""The Apple-GPU engine: `torch.mps.compile_shader`, zero-copy on MPS tensors.

torch binds a tensor argument as its MTLBuffer at `storage_offset * element_size`, so
views and offsets reach the kernel without a copy; dispatches are queued on torch's current
MPS stream, ordered with torch's own MPS work. Needs macOS with an Apple GPU.
"""

from __future__ import annotations

import re
from typing import Any

from msltrans.errors import MetalNonRecoverableError
from msltrans.runtime._cache import LibraryCache


def mps_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def _compile(source: str) -> Any:
    import torch

    try:
        return torch.mps.compile_shader(source)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "no message"
        raise MetalNonRecoverableError(
            f"Apple's Metal compiler rejected the generated MSL: {first}",
            hint="run `msltrans dump --stage msl` and report the kernel") from exc


class MpsEngine:
    name = "mps"
    device_type = "mps"

    def __init__(self) -> None:
        if not mps_available():
            raise MetalNonRecoverableError("MSLTRANS_ENGINE=mps but torch reports no MPS device",
                                           hint="use MSLTRANS_ENGINE=sim")
        self.libraries = LibraryCache(_compile)

    def load(self, source: str, kernel_name: str) -> Any:
        return getattr(self.libraries.get(source), kernel_name)

    def max_threads(self, function: Any) -> int:
        # Can be below 1024 for register-heavy kernels; Triton then raises OutOfResources.
        return int(function.max_threads_per_threadgroup)

    def synchronize(self) -> None:
        import torch

        torch.mps.synchronize()

    def device_name(self) -> str:
        import torch

        return str(torch._C._mps_get_name())

    def core_count(self) -> int:
        import torch

        return int(torch._C._mps_get_core_count())


def chip_slug(name: str) -> str:
    """'Apple M2 Pro' → 'apple-m2-pro' (a token that fits Triton's target string)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "apple-gpu"
