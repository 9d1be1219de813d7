"""MSL literals for constants: exact for every float (hex bits where decimal would round)."""

from __future__ import annotations

import math
import struct

_INT_LIMITS = {"char": 8, "short": 16, "int": 32, "long": 64}


def zero_literal(ctype: str) -> str:
    if ctype == "bool":
        return "false"
    if ctype.endswith("*"):
        return f"({ctype})0"
    return f"{ctype}(0)"


def int_literal(value: int, ctype: str) -> str:
    if ctype == "bool":
        return "true" if value & 1 else "false"
    bits = _INT_LIMITS[ctype]
    value &= (1 << bits) - 1  # MLIR may print i8 255 or -1; both are the same bits
    if value >= 1 << (bits - 1):
        value -= 1 << bits
    if value == -(1 << (bits - 1)):  # the most negative value has no literal
        return f"{ctype}({value + 1} - 1)" if bits < 64 else "(-9223372036854775807L - 1L)"
    if ctype == "long":
        return f"{value}L"
    return f"{ctype}({value})" if ctype != "int" else str(value)


def float_literal(value: float, ctype: str) -> str:
    if math.isnan(value) or math.isinf(value):
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        as_float = f"as_type<float>(0x{bits:08x}u)"
        return as_float if ctype == "float" else f"{ctype}({as_float})"
    # 9 significant digits round-trip every float; half/bfloat values are exact floats.
    text = repr(float(struct.unpack("<f", struct.pack("<f", value))[0]))
    if "e" not in text and "." not in text:
        text += ".0"
    lit = f"{text}f"
    return lit if ctype == "float" else f"{ctype}({lit})"


def literal(value: object, ctype: str) -> str:
    if isinstance(value, bool):
        return int_literal(int(value), ctype) if ctype != "float" else float_literal(
            float(value), ctype)
    if isinstance(value, int):
        if ctype in ("float", "half", "bfloat"):
            return float_literal(float(value), ctype)
        return int_literal(value, ctype)
    if isinstance(value, float):
        return float_literal(value, ctype)
    raise TypeError(f"constant {value!r}")
