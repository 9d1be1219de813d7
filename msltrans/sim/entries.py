"""Generated `extern "C"` entry points, one per kernel, of type msl_sim_entry (abi.h)."""

from __future__ import annotations

from msltrans.sim.signatures import ENTRY_THREAD, KernelSignature, builtin_value

ENTRY_PREFIX = "__msl_sim_entry_"
# The entry's parameters: reserved-looking names, so no kernel (`b`, `t`, `tg`) is shadowed.
ENTRY_BUFFERS, ENTRY_THREADGROUP = "__msl_sim_b", "__msl_sim_tg"


def entry_symbol(index: int) -> str:
    return f"{ENTRY_PREFIX}{index}"


def lanes_symbol(index: int) -> str:
    """The same kernel run a simdgroup at a time, where the lanes pass made one."""
    return f"__msl_sim_lanes_{index}"


def lanes_frame_symbol(index: int) -> str:
    """A constant the lanes pass defines beside the lanes entry: the bytes of its 32 lanes'
    stack objects (unsigned 64-bit)."""
    return f"{lanes_symbol(index)}_frame_bytes"


def generate_entries(kernels: list[KernelSignature]) -> str:
    lines = ['#line 1 "<msl_sim entries>"']
    for index, kernel in enumerate(kernels):
        args = []
        for param in kernel.params:
            if param.kind == "buffer":
                args.append(f"msl_sim_arg{{{ENTRY_BUFFERS}[{param.index}]}}")
            elif param.kind == "threadgroup":
                args.append(f"msl_sim_arg{{{ENTRY_THREADGROUP}[{param.index}]}}")
            else:
                args.append(builtin_value(param))
        lines.append(
            f'extern "C" void {entry_symbol(index)}(void *const *{ENTRY_BUFFERS}, '
            f"void *const *{ENTRY_THREADGROUP}, const msl_sim_thread *{ENTRY_THREAD}) {{ "
            f"(void){ENTRY_BUFFERS}; (void){ENTRY_THREADGROUP}; (void){ENTRY_THREAD}; "
            f"{kernel.callee}({', '.join(args)}); }}")
    return "\n".join(lines) + "\n"
