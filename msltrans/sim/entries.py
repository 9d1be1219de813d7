"""Generated `extern "C"` entry points, one per kernel, of type msl_sim_entry (abi.h)."""

from __future__ import annotations

from msltrans.sim.signatures import KernelSignature, builtin_value

ENTRY_PREFIX = "__msl_sim_entry_"


def entry_symbol(index: int) -> str:
    return f"{ENTRY_PREFIX}{index}"


def generate_entries(kernels: list[KernelSignature]) -> str:
    lines = ['#line 1 "<msl_sim entries>"']
    for index, kernel in enumerate(kernels):
        args = []
        for param in kernel.params:
            if param.kind == "buffer":
                args.append(f"msl_sim_arg{{b[{param.index}]}}")
            elif param.kind == "threadgroup":
                args.append(f"msl_sim_arg{{tg[{param.index}]}}")
            else:
                args.append(builtin_value(param))
        lines.append(
            f'extern "C" void {entry_symbol(index)}(void *const *b, void *const *tg, '
            f"const msl_sim_thread *t) {{ (void)b; (void)tg; (void)t; "
            f"{kernel.callee}({', '.join(args)}); }}")
    return "\n".join(lines) + "\n"
