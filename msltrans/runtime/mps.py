"""The Apple-GPU engine: `torch.mps.compile_shader`, zero-copy on MPS tensors.

torch binds a tensor argument as its MTLBuffer at `storage_offset * element_size`, so
views and offsets reach the kernel without a copy; dispatches are queued on torch's current
MPS stream, ordered with torch's own MPS work. Needs macOS with an Apple GPU.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from msltrans import math_mode, msl_version
from msltrans.abi.limits import BUFFER_TABLE_SLOTS, DIRECT_POINTER_SLOTS
from msltrans.errors import MetalNonRecoverableError
from msltrans.runtime._cache import LibraryCache


def mps_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


# Unsigned 64-bit tl.atomic_max/min lower to atomic_ulong's void max/min (msltrans/lower/
# atomic64.py): MSL specification 6.15.4.6, which the Metal Feature Set Tables give to Apple9
# GPUs and later and to Apple8 GPUs in a Mac, i.e. M2 and later; not the M1 (Apple7).
_ULONG_MINMAX = re.compile(r"\bmsl_atomic_u(max|min)64\(")


def check_device_features(source: str, device_name: Callable[[], str]) -> None:
    """Refuse MSL that uses a feature this GPU (MTLDevice.name, e.g. 'Apple M2 Pro') lacks."""
    if not _ULONG_MINMAX.search(source):
        return
    name = device_name()
    m = re.match(r"Apple M(\d+)\b", name)
    if m is None or int(m.group(1)) < 2:
        raise MetalNonRecoverableError(
            f"unsigned 64-bit tl.atomic_max/min needs atomic_ulong max/min (MSL 6.15.4.6), "
            f"which Apple GPUs have from the M2 on; this GPU is {name!r}",
            hint="use 32-bit data on this GPU")


def _compile(source: str) -> Any:
    import torch

    try:
        return torch.mps.compile_shader(source)
    except (RuntimeError, SyntaxError) as exc:  # torch raises SyntaxError for MSL errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "no message"
        raise MetalNonRecoverableError(
            f"Apple's Metal compiler rejected the generated MSL: {first}",
            hint="run `msltrans dump --stage msl` and report the kernel") from exc


def argument_buffer_refusal(kernel: str, pointers: int, spilled: list[str]
                            ) -> MetalNonRecoverableError:
    """Why a kernel whose pointers overflow Metal's buffer table does not run on MPS.

    torch.mps.compile_shader can PASS the addresses: a list of MPS tensors as one argument
    becomes a setBytes of each tensor's `gpuAddress + storage_offset * element_size`
    (torch/csrc/mps/Module.cpp, OptionalArgCaster::setValue -> at::native::mps::
    get_tensor_gpu_address, aten/src/ATen/native/mps/OperationUtils.mm). It cannot make the
    buffers behind them RESIDENT: the kernel object's `__call__` only runs startEncoding, setArg
    and dispatch (MetalKernelFunction, same file), none of which calls the encoder's
    `useResource:usage:` / `useHeap:`, and torch exposes neither the encoder nor a residency set
    to Python. Metal requires every buffer a kernel reaches through an argument buffer to be made
    resident for the dispatch (useResource:usage:, useHeap: or an MTLResidencySet); without it the
    access is undefined, and Metal's hazard tracking does not see those buffers either (a write
    through such a pointer is not ordered with torch's next use of the tensor). PyTorch's own
    argument-buffer kernels call useResource for each tensor (MultiTensorApply.h)."""
    return MetalNonRecoverableError(
        f"kernel `{kernel}` has {pointers} pointer arguments; Metal's buffer table has "
        f"{BUFFER_TABLE_SLOTS} slots, so {', '.join(spilled)} would travel as GPU addresses in "
        "an argument buffer, and torch.mps.compile_shader's launch cannot make the buffers "
        "behind such addresses resident for the dispatch (it never calls useResource on its "
        "encoder), which Metal requires (docs/backend.md, \"Pointers past the table\")",
        hint=f"pass at most {DIRECT_POINTER_SLOTS} tensors (e.g. one tensor and offsets into "
             "it), or run on the simulator (MSLTRANS_ENGINE=sim)")


class MpsEngine:
    name = "mps"
    device_type = "mps"
    # Pointers past the table: refused (argument_buffer_refusal says why).
    argument_buffers = False

    def __init__(self) -> None:
        if not mps_available():
            raise MetalNonRecoverableError("MSLTRANS_ENGINE=mps but torch reports no MPS device",
                                           hint="use MSLTRANS_ENGINE=sim")
        self.libraries = LibraryCache(_compile)

    def load(self, source: str, kernel_name: str) -> Any:
        math_mode.check_launch(msl_version.target())
        check_device_features(source, self.device_name)
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
