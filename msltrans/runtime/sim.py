"""The simulator engine: MSL runs on the CPU through `msltrans.sim` (clang + fibers).

Pointer arguments are CPU tensors; the simulator reads and writes their memory in place
(`data_ptr()` already includes the storage offset), so results appear in the caller's tensors
without copies, as they do on MPS.
"""

from __future__ import annotations

from typing import Any

from msltrans.abi.limits import MAX_THREADS_PER_THREADGROUP
from msltrans.runtime._cache import LibraryCache


def _compile(source: str) -> Any:
    from msltrans import sim  # imported lazily: building the simulator runtime takes a while

    return sim.compile_shader(source)


class SimEngine:
    name = "sim"
    device_type = "cpu"
    # A list of tensors fills the kernel's argument buffer with their staged copies' addresses,
    # each staged and checked like any buffer (msltrans/sim/args.py).
    argument_buffers = True

    def __init__(self) -> None:
        self.libraries = LibraryCache(_compile)

    def load(self, source: str, kernel_name: str) -> Any:
        return getattr(self.libraries.get(source), kernel_name)

    def max_threads(self, function: Any) -> int:
        return int(getattr(function, "max_threads_per_threadgroup", MAX_THREADS_PER_THREADGROUP))

    def synchronize(self) -> None:
        # Dispatches run to completion before the call returns.
        return None

    def device_name(self) -> str:
        return "msltrans CPU Metal simulator"

    def core_count(self) -> int:
        # The simulator models a base M1 (8 GPU cores) so grid-sizing heuristics look realistic.
        return 8
