"""Apple's NaNs on an x86 host: every float result that is a NaN becomes the positive quiet
NaN (fp32 0x7FC00000, fp16 0x7E00, bf16 0x7FC0).

The host's default NaN (0 × inf, inf − inf, 0 / 0, sqrt(−1)) is x86's "real indefinite",
0xFFC00000: its sign bit is SET; and x86 passes a NaN operand's sign and payload through.
Apple GPUs do neither. Dougall Johnson's Apple G13 ISA work (github.com/dougallj/applegpu,
`fma.py`, whose model of the FMA unit is checked against hardware by its `hwtest.py`)
returns the canonical NaN 0x7FF8000000000000 (then rounded to 0x7FC00000 / 0x7E00) for every
NaN result of fadd, fmul and ffma, NaN operands included (`ARM64_NANS = False`). Public Apple
documentation says nothing on it; that model is the source, and the assumption is that the
other arithmetic units behave the same. NVIDIA's is positive too (0x7FFFFFFF), so ops that
read a NaN's sign (symmetric `tl.clamp`, `signbit`, `copysign`) then agree with Triton's CUDA
backend on NaNs that arithmetic produced.

How: the kernel is compiled to unoptimised LLVM IR, every floating-point `fadd`, `fsub`,
`fmul`, `fdiv`, `frem`, every arithmetic intrinsic (`llvm.fma`, `llvm.sqrt`, `llvm.exp`, ...)
and every call of a float-returning function the module does not define (libm) gets
`select(isnan(r), NaN, r)` after it, and the IR is then optimised and compiled as before.
Sign-bit operations (`fneg`, `llvm.fabs`, `llvm.copysign`), conversions, loads, selects,
min/max and rounding intrinsics, and calls of the module's own functions (whose arithmetic is
rewritten inside them; `as_type` and friends only move bits) are left as they are.

Functions whose name contains `msl_sim_nan_raw` (the shim's multiply-accumulate arithmetic)
are left whole: they canonicalise their own results once, at the end of a chain of
arithmetic, which gives the same bits (whether a chain's result is a NaN does not depend on
the NaNs' signs and payloads along it) without a compare and select after every step.
"""

from __future__ import annotations

import re

_FLOAT = r"(?:float|half|bfloat)"
_TYPE = rf"(?:<(?P<lanes>\d+) x (?P<vec>{_FLOAT})>|(?P<scalar>{_FLOAT}))"
_CANON = {"float": "0x7FF8000000000000", "half": "0xH7E00", "bfloat": "0xR7FC0"}
_NAME = r'(?P<name>%(?:[-\w$.]+|"[^"]*"))'
_BINARY = re.compile(rf"^(?P<indent>\s*){_NAME} = (?:fadd|fsub|fmul|fdiv|frem)\b"
                     rf"(?:\s+[a-z]+)*\s+{_TYPE} ")
_CALL = re.compile(rf"^(?P<indent>\s*){_NAME} = (?:\w+ )*call\b[^@\n]*?\s{_TYPE} "
                   r"(?P<callee>@[-\w$.]+)\(")
# Calls whose result is a new float value: the arithmetic intrinsics and functions the
# module does not define (libm). Calls of functions it defines are left alone — their own
# arithmetic is rewritten inside them, and many only move bits (as_type, selects, loads).
_ARITH_INTRINSIC = re.compile(r"@llvm\.(fma|fmuladd|sqrt|exp|exp2|exp10|log|log2|log10|pow|"
                              r"powi|sin|cos|tan|asin|acos|atan|atan2|sinh|cosh|tanh|ldexp|"
                              r"vector\.reduce\.fadd|vector\.reduce\.fmul)\.")
RAW_MARK = "msl_sim_nan_raw"   # in a function's name: leave its arithmetic as it is
_DEFINE = re.compile(r"^define\b[^@\n]*(@[-\w$.]+|@\"[^\"]*\")\(", re.M)


def _renamed(name: str) -> str:
    if name.startswith('%"'):
        return f'%"msl_nanraw.{name[2:-1]}"'
    return f"%msl_nanraw.{name[1:]}"


def _suffix(name: str, tag: str) -> str:
    if name.startswith('%"'):
        return f'%"msl_{tag}.{name[2:-1]}"'
    return f"%msl_{tag}.{name[1:]}"


def _fix(indent: str, name: str, lanes: str | None, element: str) -> str:
    ty = f"<{lanes} x {element}>" if lanes else element
    flag = f"<{lanes} x i1>" if lanes else "i1"
    canon = _CANON[element]
    value = (f"<{', '.join([f'{element} {canon}'] * int(lanes))}>" if lanes else canon)
    raw, isnan = _renamed(name), _suffix(name, "isnan")
    return (f"\n{indent}{isnan} = fcmp uno {ty} {raw}, {raw}"
            f"\n{indent}{name} = select {flag} {isnan}, {ty} {value}, {ty} {raw}")


def canonicalize_nans(ir: str) -> str:
    """The IR with a NaN canonicalisation after every float arithmetic result."""
    defined = set(_DEFINE.findall(ir))
    out: list[str] = []
    raw = False
    for line in ir.split("\n"):
        if line.startswith("define"):
            raw = RAW_MARK in line.split("(", 1)[0]
        elif raw:
            raw = line != "}"
            out.append(line)
            continue
        match = _BINARY.match(line)
        if match is None:
            match = _CALL.match(line)
            if match is not None:
                callee = match.group("callee")
                if callee in defined or (callee.startswith("@llvm.")
                                         and not _ARITH_INTRINSIC.match(callee)):
                    match = None
        if match is None:
            out.append(line)
            continue
        indent, name, lanes = match.group("indent"), match.group("name"), match.group("lanes")
        element = match.group("vec") or match.group("scalar")
        head = line[:match.start("name")] + _renamed(name) + line[match.end("name"):]
        out.append(head + _fix(indent, name, lanes, element))
    return "\n".join(out)
