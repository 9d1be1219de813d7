"""On a Mac: Inductor's `mps` tensors get Triton kernels (run by msltrans on the Apple GPU)
instead of Inductor's own Metal code generator.

torch 2.13 hard-codes `MetalScheduling` for `mps` and leaves out what a Triton device needs.
`enable()` here, called by `msltrans.inductor.enable()` where MPS is available:
- registers `TritonScheduling` (with the Python wrapper) for `mps`; torch only registers its
  own when the slot is empty, so doing it before the first compile wins;
- registers device-op overrides for `mps` that add what Triton kernels' wrapper code calls
  (`get_raw_stream`, `synchronize`), after torch's own initialisation (else torch's
  registration, which runs once on first use, would overwrite them);
- registers a device interface for `mps` with the stream/device methods torch's lacks, and
  a benchmarker that times on the host clock around `torch.mps.synchronize()`
  (`torch.mps.Event` timing has been unreliable);
- turns off autotuning in subprocesses: Metal (PyObjC, torch.mps) is not fork-safe.
`disable()` puts torch's own registrations back.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

_saved: dict[str, Any] = {}


def available() -> bool:
    import torch

    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def _overrides_class() -> type:
    from torch._inductor.codegen.mps_device_op_overrides import MPSDeviceOpOverrides

    class MsltransMpsDeviceOpOverrides(MPSDeviceOpOverrides):
        """torch's MPS overrides plus what the wrapper of a Triton kernel calls."""

        def import_get_raw_stream_as(self, name: str) -> str:
            # One MPS queue; msltrans dispatches on torch's current MPS stream.
            return f"def {name}(_):\n    return 0\n"

        def synchronize(self) -> str:
            return "torch.mps.synchronize()"

    return MsltransMpsDeviceOpOverrides


def _interface_class() -> type:
    import torch
    from torch._dynamo.device_interface import MpsInterface

    class MsltransMpsInterface(MpsInterface):
        """torch's MPS device interface plus the stream/device methods Triton devices use."""

        @staticmethod
        def get_raw_stream(device_idx: int) -> int:
            return 0

        @staticmethod
        def set_device(device: Any) -> None:
            return None

        @staticmethod
        def device_count() -> int:
            return 1

        @staticmethod
        def exchange_device(device: int) -> int:
            return 0

        @staticmethod
        def maybe_exchange_device(device: int) -> int:
            return 0

        @staticmethod
        def is_triton_capable(device: Any = None) -> bool:
            return True

        @staticmethod
        def raise_if_triton_unavailable(device: Any = None) -> None:
            import triton.backends

            if "metal" not in triton.backends.backends:
                raise RuntimeError("msltrans's Triton backend `metal` is not registered")

        @staticmethod
        def memory_allocated(device: Any = None) -> int:
            return int(torch.mps.current_allocated_memory())

    return MsltransMpsInterface


def _benchmark(self: Any, fn: Any, *, warmup: int, rep: int, **_: Any) -> float:
    """Median of host-clock timings, each bracketed by torch.mps.synchronize(), in ms."""
    import torch

    def run_for(ms: float) -> list[float]:
        times: list[float] = []
        start = time.perf_counter()
        while True:
            torch.mps.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.mps.synchronize()
            t1 = time.perf_counter()
            times.append((t1 - t0) * 1e3)
            if (t1 - start) * 1e3 > ms:
                return times

    run_for(warmup)
    return statistics.median(run_for(rep))


def enable(force: bool = False) -> None:
    """Route `mps` through Triton/msltrans (only where MPS is available, or `force`)."""
    if _saved or not (force or available()):
        return
    import torch._inductor.config as config
    from torch._dynamo import device_interface
    from torch._inductor.codegen import common
    from torch._inductor.codegen.triton import TritonScheduling
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen
    from torch._inductor.runtime import benchmarking

    _saved["scheduling"] = common.device_codegens.get("mps")
    _saved["interface"] = device_interface.device_interfaces.get("mps")
    common._initialize_device_op_overrides()
    _saved["overrides"] = common.device_op_overrides_dict.get("mps")
    _saved["benchmarker"] = benchmarking._BENCHMARK_DISPATCH.get("mps")
    _saved["autotune_in_subproc"] = config.autotune_in_subproc
    common.register_backend_for_device("mps", TritonScheduling, PythonWrapperCodegen)
    common.register_device_op_overrides("mps", _overrides_class()())
    if not device_interface._device_initialized:
        device_interface.init_device_reg()
    device_interface.register_interface_for_device("mps", _interface_class())
    benchmarking.register_benchmarker("mps", _benchmark, override=True)
    config.autotune_in_subproc = False


def disable() -> None:
    if not _saved:
        return
    import torch._inductor.config as config
    from torch._dynamo import device_interface
    from torch._inductor.codegen import common
    from torch._inductor.runtime import benchmarking

    if _saved["scheduling"] is None:
        common.device_codegens.pop("mps", None)
    else:
        common.device_codegens["mps"] = _saved["scheduling"]
    if _saved["overrides"] is not None:
        common.register_device_op_overrides("mps", _saved["overrides"])
    if _saved["interface"] is not None:
        device_interface.register_interface_for_device("mps", _saved["interface"])
    if _saved["benchmarker"] is None:
        benchmarking._BENCHMARK_DISPATCH.pop("mps", None)
    else:
        benchmarking._BENCHMARK_DISPATCH["mps"] = _saved["benchmarker"]
    config.autotune_in_subproc = _saved["autotune_in_subproc"]
    _saved.clear()
