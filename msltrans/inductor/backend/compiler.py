"""`InductorMetalBackend`: Inductor's `cpu` / `mps` Triton targets, compiled as Metal.

Inductor compiles each kernel for `GPUTarget(<device type>, <compute capability>, 32)`;
for CPU tensors that is `GPUTarget("cpu", "", 32)`. This backend accepts those targets only
while `msltrans.inductor` is enabled, and runs msltrans's own stages (TTIR → TTGIR → MSL) for
the simulator's default chip. MSL for CPU tensors starts with `driver.SIM_ENGINE_MARKER`,
which sends it to the simulator even where the active engine is the Apple GPU.
Triton requires exactly one concrete `BaseBackend` in this module: import others by module.
"""

from __future__ import annotations

from typing import Any

from triton.backends.compiler import GPUTarget

from msltrans.backend import compiler as _metal
from msltrans.backend import driver as _driver
from msltrans.inductor import state

TARGETS = ("cpu", "mps")


class InductorMetalBackend(_metal.MetalBackend):

    @staticmethod
    def supports_target(target: GPUTarget) -> bool:
        return target.backend in TARGETS and state.enabled()

    def parse_options(self, opts: dict[str, Any]) -> Any:
        # Inductor sets num_stages on every config; it has no effect on Metal (msltrans/options.py),
        # and warning about it would only be noise for torch.compile users.
        return super().parse_options({k: v for k, v in opts.items() if k != "num_stages"})

    def add_stages(self, stages: dict[str, Any], options: Any, language: Any) -> None:
        super().add_stages(stages, options, language)
        if self.target.backend == "cpu":
            to_msl = stages["msl"]
            stages["msl"] = lambda src, metadata: _driver.SIM_ENGINE_MARKER + to_msl(src, metadata)

    def hash(self) -> str:
        return f"{super().hash()}-inductor-{self.target.backend}"
