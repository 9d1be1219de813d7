"""`InductorCpuDriver`: the `cpu` backend's driver. It never claims to be active, and every
`MetalDriver` counts as one of its instances.

Inductor calls `triton_helpers.set_driver_to_cpu()` before it compiles or loads a kernel for
CPU tensors: it keeps the active driver if that is an instance of the `cpu` backend's driver,
else makes a new one active. The `isinstance` answer below lets msltrans's own active driver
stay active (it runs CPU-tensor kernels on the simulator, also on a Mac whose engine is the
Apple GPU), so a torch.compile call never changes where later `kernel[grid](...)` launches
go. Only where another vendor's driver is active does Inductor install this one (a
MetalDriver on the simulator), as it would install triton-cpu's.
Triton requires exactly one concrete `DriverBase` in this module: import others by module.
"""

from __future__ import annotations

import abc

from msltrans.backend import driver as _metal


class _CoversMetalDrivers(abc.ABCMeta):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, _metal.MetalDriver)


class InductorCpuDriver(_metal.MetalDriver, metaclass=_CoversMetalDrivers):

    def __init__(self) -> None:
        super().__init__("sim")

    @staticmethod
    def is_active() -> bool:
        return False
