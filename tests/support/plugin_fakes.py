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
    offset: int | None = None


@dataclass(frozen=True)
class FakeProgram:
    source: str
    kernel_name: str
    num_warps: int
    threads_per_group: int
    params: tuple[FakeParam, ...]
    shared_bytes: int = 0
    buffer_alignment: tuple[tuple[int, int], ...] = ()
    args_size: int = 0


# Triton type → MSL storage type, as msltrans.lower.msl_types spells it.
_MSL = {"i1": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long",
        "fp16": "half", "bf16": "bfloat", "fp32": "float", "fp64": "float"}
_STRUCT = {"bool": "?", "char": "b", "short": "h", "int": "i", "long": "q", "half": "e",
           "float": "f"}


def _msl(triton_type: str) -> str:
    t = {"f16": "fp16", "f32": "fp32", "f64": "fp64"}.get(triton_type, triton_type)
    return _MSL[t.replace("u", "i") if t[0] == "u" else t]


def struct_layout(types_: list[str]) -> tuple[dict[int, int], int]:
    """{argument index: byte offset} of the scalars and the struct size, as the lowering
    lays them out (msltrans/lower/kernel_args.py)."""
    from msltrans.lower.kernel_args import layout_struct

    scalars = [(f"a{i}", _msl(t)) for i, t in enumerate(types_) if not t.startswith("*")]
    struct = layout_struct("fake_args", scalars)
    offsets = {int(f.name[1:]): f.offset for f in struct.fields}
    return offsets, (struct.size if scalars else 0)


def unpack_scalars(data: list[int], types_: list[str]) -> list[Any]:
    """Read the scalars of `types_` (the kernel's runtime signature) back from the struct
    bytes a launch sent; pointers are skipped."""
    import struct

    offsets, _ = struct_layout(types_)
    out = []
    for i, t in enumerate(types_):
        if t.startswith("*"):
            continue
        if _msl(t) == "bfloat":
            bits = int.from_bytes(bytes(data[offsets[i]:offsets[i] + 2]), "little")
            out.append(struct.unpack("<f", (bits << 16).to_bytes(4, "little"))[0])
            continue
        fmt = "<" + _STRUCT[_msl(t)]
        out.append(struct.unpack_from(fmt, bytes(data), offsets[i])[0])
    return out


def fake_lower_module(module: Any, opt: Any = None) -> FakeProgram:
    name = module.get_entry_func_name()
    types_ = module.get_function_signature(module.get_function(name))
    num_warps = module.get_int_attr("ttg.num-warps")
    offsets, size = struct_layout(types_)
    n_ptr = sum(t.startswith("*") for t in types_)
    params, ptr = [], 0
    for i, t in enumerate(types_):
        if t.startswith("*"):
            params.append(FakeParam(f"arg{i}", "pointer", t, ptr))
            ptr += 1
        else:
            params.append(FakeParam(f"arg{i}", "scalar", t, n_ptr, offsets[i]))
    src = f"// fake MSL for {name}\nkernel void {name}() {{}}\n"
    return FakeProgram(src, name, num_warps, num_warps * 32, tuple(params), args_size=size)


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
    argument_buffers: bool = True  # takes a list of tensors, as the simulator does
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
