"""What the metal_stdlib shim tests add on top of `msltrans.sim.compile_shader`: the usual
MSL prologue and the tests' launch convention (`threadgroup=[bytes, ...]`)."""

from __future__ import annotations

from typing import Any

import msltrans.sim as sim

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


class _Kernel:
    """Adapts `threadgroup=[bytes...]` to the real API's `threadgroup_memory=`."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    def __call__(self, *args: Any, threads: Any, group_size: Any, threadgroup: Any = ()) -> None:
        memory = list(threadgroup) if threadgroup else None
        # simulator errors are SimError, a RuntimeError, so tests match them as RuntimeError
        self.kernel(*args, threads=threads, group_size=group_size, threadgroup_memory=memory)


class _Library:
    def __init__(self, lib: Any) -> None:
        self.lib = lib

    def __getattr__(self, name: str) -> _Kernel:
        return _Kernel(getattr(self.lib, name))


def compile_shader(source: str, include_dirs: list[str] | None = None) -> _Library:
    return _Library(sim.compile_shader(source, include_dirs=include_dirs or ()))
