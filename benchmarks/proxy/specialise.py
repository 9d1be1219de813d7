"""Compile a kernel the way a real launch specialises it, without launching it.

Triton's launcher looks at the argument values: a pointer whose address is a multiple of 16
and an integer that is a multiple of 16 get `tt.divisibility = 16`; an integer equal to 1
becomes the constant 1; msltrans's launcher adds `tt.pointer_range = 32` to a pointer whose
buffer is under 2 GB (every buffer here is). The speed of the emitted code depends on exactly
these facts (they decide the layouts Triton picks, what msltrans can vectorise and how it
forms addresses), so every benchmark and codegen statistic compiles with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from msltrans.ir import read_module
from msltrans.lower import MslProgram, lower_module
from msltrans.toolchain import to_ttgir


@dataclass(frozen=True)
class Arg:
    """One launch argument: a Triton type ("*fp32", "i32", "fp32") and, for integers, the
    value the launch passes (pointers are taken as 16-byte aligned, as torch allocates)."""

    type: str
    value: Any = 0


@dataclass(frozen=True)
class Specialised:
    signature: dict[str, str]
    constexprs: dict[str, Any]
    divisible_by_16: tuple[str, ...]
    within_2gb: tuple[str, ...]


def specialise(args: dict[str, Arg], constexprs: dict[str, Any]) -> Specialised:
    sig: dict[str, str] = {}
    cx = dict(constexprs)
    div: list[str] = []
    small: list[str] = []
    for name, a in args.items():
        if a.type.startswith("*"):
            sig[name] = a.type
            div.append(name)
            small.append(name)
        elif a.type[0] in "iu" and isinstance(a.value, int) and a.value == 1:
            cx[name] = 1
        else:
            sig[name] = a.type
            if a.type[0] in "iu" and isinstance(a.value, int) and a.value % 16 == 0:
                div.append(name)
    return Specialised(sig, cx, tuple(div), tuple(small))


def variant_divisibility(program: MslProgram, args: dict[str, Arg]) -> dict[str, int]:
    """The divisibilities the launcher's alignment variant would state for these values
    (msltrans/runtime/align_variants.py): empty when the first compile runs."""
    out = {}
    for name, need in program.alignment_keys:
        value = args[name].value
        level = need if value == 0 else min(value & -value, need)
        if isinstance(value, int) and level > 1:
            out[name] = level
    return out


def compile_launch(fn: Any, args: dict[str, Arg], constexprs: dict[str, Any], num_warps: int
                   ) -> tuple[MslProgram, dict[str, int]]:
    """The program a launch with these values runs (Triton's specialisation, then the
    launcher's alignment variant where the values allow one) and the divisibilities that
    variant states (empty: the first compile)."""
    s = specialise(args, constexprs)
    mod = to_ttgir(fn, s.signature, s.constexprs, num_warps, divisible_by_16=s.divisible_by_16,
                   within_2gb=s.within_2gb)
    program = lower_module(read_module(mod))
    extra = variant_divisibility(program, args)
    if not extra:
        return program, extra
    mod = to_ttgir(fn, s.signature, s.constexprs, num_warps, divisible_by_16=s.divisible_by_16,
                   within_2gb=s.within_2gb, divisibility=extra)
    return lower_module(read_module(mod)), extra


def compile_specialised(fn: Any, args: dict[str, Arg], constexprs: dict[str, Any],
                        num_warps: int) -> MslProgram:
    return compile_launch(fn, args, constexprs, num_warps)[0]


def module_specialised(fn: Any, args: dict[str, Arg], constexprs: dict[str, Any],
                       num_warps: int) -> Any:
    """The walked `msltrans.ir` module (for analyses) of the same specialisation."""
    s = specialise(args, constexprs)
    return read_module(to_ttgir(fn, s.signature, s.constexprs, num_warps,
                                divisible_by_16=s.divisible_by_16,
                                within_2gb=s.within_2gb))
