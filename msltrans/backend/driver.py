"""`MetalDriver`: Triton's runtime driver for Metal — engine choice, target, launcher, benchmarker.

Engines: "mps" (Apple GPU through torch.mps) on macOS with MPS, else "sim" (the CPU Metal
simulator); `MSLTRANS_ENGINE=mps|sim` overrides. The driver never claims a machine whose CUDA or
AMD driver is active (Triton wants exactly one active driver) unless `TRITON_DEFAULT_BACKEND=metal`.
Triton requires exactly one concrete `DriverBase` subclass in this module's namespace.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase

from msltrans import settings
from msltrans.abi.limits import (
    MAX_THREADS_PER_THREADGROUP,
    SIMD_WIDTH,
    THREADGROUP_MEMORY_BYTES,
)
from msltrans.backend.bench import HostDeviceInterface, make_do_bench
from msltrans.errors import MetalNonRecoverableError
from msltrans.runtime import launch as _launch
from msltrans.runtime.mps import chip_slug, mps_available

NOMINAL_REGS_PER_THREAD = 32  # Metal reports no register use; nominal, keeps occupancy maths finite
ENGINES = ("mps", "sim")
# First line of the MSL of a torch.compile kernel for CPU tensors (msltrans.inductor): such a
# kernel runs on the simulator even where the driver's engine is the Apple GPU.
SIM_ENGINE_MARKER = "// msltrans engine: sim (a torch.compile kernel for CPU tensors)\n"
# Inductor's Triton targets (GPUTarget(<torch device type>, ...)) that msltrans.inductor compiles
INDUCTOR_TARGETS = ("cpu", "mps")

_probing = False


def other_gpu_driver_active() -> bool:
    """Is a CUDA/AMD (or any other plugin's) driver active here?"""
    global _probing
    if _probing:  # another plugin probing us while we probe it
        return False
    _probing = True
    try:
        from triton.backends import backends

        for name, backend in backends.items():
            if name == "metal":
                continue
            try:
                if backend.driver.is_active():
                    return True
            except Exception:  # a broken foreign driver does not make it active
                continue
        return False
    finally:
        _probing = False


def select_engine() -> str:
    forced = settings.text(settings.ENGINE).lower()
    if forced:
        if forced not in ENGINES:
            raise MetalNonRecoverableError(f"MSLTRANS_ENGINE={forced!r} is not an engine",
                                           hint="use MSLTRANS_ENGINE=mps or MSLTRANS_ENGINE=sim")
        return forced
    return "mps" if sys.platform == "darwin" and mps_available() else "sim"


def make_engine(name: str) -> Any:
    if name == "mps":
        from msltrans.runtime.mps import MpsEngine

        return MpsEngine()
    from msltrans.runtime.sim import SimEngine

    return SimEngine()


def device_id(device_type: str) -> int | str:
    """The engine's device as torch names it: `torch.cpu.current_device()` is "cpu" (the
    simulator's buffers are CPU tensors); torch.mps has one device and no current_device(): 0."""
    return "cpu" if device_type == "cpu" else 0


def _is_our_device(device: Any, device_type: str, ident: int | str) -> bool:
    if device is None or device == ident:
        return True
    if isinstance(device, int) and not isinstance(device, bool):
        return device == 0
    text = str(device)  # "cpu", "mps", "mps:0", torch.device(...)
    return text in (device_type, f"{device_type}:0")


class MetalUtils:
    """What Triton's CompiledKernel calls on `driver.active.utils`."""

    def __init__(self, engine: Any, sim_engine: Callable[[], Any] | None = None) -> None:
        self.engine = engine
        self.sim_engine = sim_engine or (lambda: engine)

    def load_binary(self, name: str, kernel: bytes | str, shared: int, device: Any
                    ) -> tuple[Any, Any, int, int, int]:
        source = kernel.decode("utf-8") if isinstance(kernel, bytes) else kernel
        if shared > THREADGROUP_MEMORY_BYTES:
            raise MetalNonRecoverableError(
                f"kernel `{name}` needs {shared} bytes of threadgroup memory; Metal has "
                f"{THREADGROUP_MEMORY_BYTES}")
        engine = self.sim_engine() if source.startswith(SIM_ENGINE_MARKER) else self.engine
        function = engine.load(source, name)
        return source, function, NOMINAL_REGS_PER_THREAD, 0, engine.max_threads(function)

    def unload_module(self, module: Any) -> None:
        # Libraries stay in the engine's per-process cache: a recompiled CompiledKernel with
        # the same MSL reuses them.
        return None

    @functools.cache  # noqa: B019 - the utils object lives as long as the driver
    def get_device_properties(self, device: Any = None) -> dict[str, Any]:
        cores = self.engine.core_count()
        return {
            "max_shared_mem": THREADGROUP_MEMORY_BYTES,
            "max_threads_per_block": MAX_THREADS_PER_THREADGROUP,
            "max_threads_per_threadgroup": MAX_THREADS_PER_THREADGROUP, "warpSize": SIMD_WIDTH,
            "warp_size": SIMD_WIDTH, "multiprocessor_count": cores,
            "max_num_regs": NOMINAL_REGS_PER_THREAD * MAX_THREADS_PER_THREADGROUP,
            "name": self.engine.device_name(), "engine": self.engine.name,
            # the names Intel's XPU fork of Triton's tutorials read
            "max_work_group_size": MAX_THREADS_PER_THREADGROUP, "sub_group_sizes": [SIMD_WIDTH],
        }


class MetalDriver(DriverBase):

    def __init__(self, engine_name: str | None = None) -> None:
        super().__init__()
        self.engine_name = engine_name or select_engine()
        self.engine = make_engine(self.engine_name)
        self._sim_engine = self.engine if self.engine_name == "sim" else None
        self.utils = MetalUtils(self.engine, self.sim_engine)
        self.launcher_cls = self.make_launcher
        self.device_id = device_id(self.engine.device_type)
        if self.engine_name == "mps":
            self.chip = chip_slug(self.engine.device_name())
        else:
            from msltrans.ir.pipeline import DEFAULT_CHIP

            self.chip = DEFAULT_CHIP

    def sim_engine(self) -> Any:
        """The engine of torch.compile's kernels for CPU tensors: the simulator, also on a Mac
        (created there on first use)."""
        if self._sim_engine is None:
            self._sim_engine = make_engine("sim")
        return self._sim_engine

    def make_launcher(self, src: Any, metadata: Any) -> Any:
        """Triton's `launcher_cls(src, metadata)`: kernels that Inductor compiled for CPU or MPS
        tensors (msltrans.inductor) get a launcher that counts their launches, on the engine
        of their tensors' device; every other kernel runs on this driver's engine."""
        backend = getattr(getattr(metadata, "target", None), "backend", "metal")
        if backend not in INDUCTOR_TARGETS:
            return _launch.Launcher(src, metadata, engine=self.engine)
        from msltrans.runtime.launch_count import CountingLauncher

        engine = self.sim_engine() if backend == "cpu" else self.engine
        return CountingLauncher(src, metadata, engine=engine)

    @staticmethod
    def is_active() -> bool:
        selected = settings.raw(settings.TRITON_BACKEND) or ""
        if selected:
            return selected == "metal"
        return not other_gpu_driver_active()

    def map_python_to_cpp_type(self, ty: str) -> str:
        if ty.startswith("*"):
            return "device void*"
        table = {"i1": "bool", "i8": "char", "u8": "uchar", "i16": "short", "u16": "ushort",
                 "i32": "int", "u32": "uint", "i64": "long", "u64": "ulong", "fp16": "half",
                 "bf16": "bfloat", "fp32": "float", "fp64": "float"}
        if ty not in table:
            raise MetalNonRecoverableError(f"Triton type {ty} has no Metal equivalent")
        return table[ty]

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("metal", self.chip, SIMD_WIDTH)

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device(self.engine.device_type)

    def get_device_interface(self) -> Any:
        # On both engines: `triton.testing.do_bench` times with this interface's Events, and
        # torch.mps.Event timing has been unreliable (backend/bench.py), so its events are the
        # host clock around the engine's synchronize (torch.mps.synchronize on MPS). torch.mps
        # has no current_device() either, which triton.testing.get_dram_gbps calls.
        return HostDeviceInterface(self.engine.synchronize)

    # One device, one queue: Triton asks for these on every launch, so keep them trivial.
    # Triton keys `JITFunction.device_caches` by get_current_device(); device-agnostic code
    # (Triton's own tests) indexes it with `getattr(torch, device_type).current_device()`.
    def get_current_device(self) -> int | str:
        return self.device_id

    def set_current_device(self, device: Any) -> None:
        if not _is_our_device(device, self.engine.device_type, self.device_id):
            raise MetalNonRecoverableError(
                f"device {device!r} does not exist; the {self.engine_name} engine has one "
                f"device, {self.device_id!r} (torch device '{self.engine.device_type}')")

    def get_current_stream(self, device: Any = None) -> int:
        return 0

    def get_benchmarker(self) -> Any:
        cache = self.get_empty_cache_for_benchmark()
        return make_do_bench(self.engine.synchronize, lambda: self.clear_cache(cache))

    def get_empty_cache_for_benchmark(self) -> Any:
        import torch

        # Larger than the last-level cache, so a benchmark does not time warm-cache reads:
        # 256 MB like Triton on a GPU; 32 MB on the CPU simulator, where zeroing is slow.
        size = 256 * 1024 * 1024 if self.engine_name == "mps" else 32 * 1024 * 1024
        return torch.empty(size // 4, dtype=torch.int, device=self.engine.device_type)

    def clear_cache(self, cache: Any) -> None:
        cache.zero_()
