"""Fakes for testing the Triton plugin's plumbing without the real lowering or simulator.

`fake_lower_module` stands in for `msltrans.backend.compiler.lower_ttgir` (a program built
from the TTGIR function signature); `RecordingEngine` records every dispatch instead of
running it. Tests that use the fake lowering MUST use a private TRITON_CACHE_DIR, or fake
MSL would land in the cache.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FakeParam:
    name: str
    kind: str
    triton_type: str
    buffer_index: int
    arg_cast: str | None


@dataclass(frozen=True)
class FakeProgram:
    source: str
    kernel_name: str
    num_warps: int
    threads_per_group: int
    params: tuple[FakeParam, ...]
    shared_bytes: int = 0
    buffer_alignment: tuple[tuple[int, int], ...] = ()


_CASTS = {"i32": "int32", "i1": "uint8", "i8": "int8", "i16": "int16"}


def fake_lower_module(module: Any, opt: Any = None) -> FakeProgram:
    name = module.get_entry_func_name()
    types_ = module.get_function_signature(module.get_function(name))
    num_warps = module.get_int_attr("ttg.num-warps")
    params = tuple(
        FakeParam(f"arg{i}", "pointer" if t.startswith("*") else "scalar", t, i, _CASTS.get(t))
        for i, t in enumerate(types_))
    src = f"// fake MSL for {name}\nkernel void {name}() {{}}\n"
    return FakeProgram(src, name, num_warps, num_warps * 32, params)


@dataclass
class Dispatch:
    kernel: str
    args: tuple[Any, ...]
    threads: tuple[int, int, int]
    group_size: tuple[int, int, int]
    arg_casts: dict[int, str]


@dataclass
class RecordingEngine:
    name: str = "sim"
    device_type: str = "cpu"
    calls: list[Dispatch] = field(default_factory=list)
    loads: list[str] = field(default_factory=list)

    def load(self, source: str, kernel_name: str) -> Any:
        self.loads.append(source)

        def function(*args: Any, threads: Any, group_size: Any, arg_casts: Any) -> None:
            self.calls.append(Dispatch(kernel_name, args, tuple(threads), tuple(group_size),
                                       dict(arg_casts)))

        return function

    def max_threads(self, function: Any) -> int:
        return 1024

    def synchronize(self) -> None:
        return None

    def device_name(self) -> str:
        return "recording engine"

    def core_count(self) -> int:
        return 8


def install_engine(driver: Any, engine: Any) -> None:
    """Point an existing MetalDriver at another engine (what MetalDriver.__init__ wires)."""
    from msltrans.backend.driver import MetalUtils
    from msltrans.runtime.launch import Launcher

    driver.engine = engine
    driver.utils = MetalUtils(engine)
    driver.launcher_cls = functools.partial(Launcher, engine=engine)
