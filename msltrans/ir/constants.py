"""Constant payloads the bindings do not give (`get_constant_value` covers ints only).

MLIR prints a float in short decimal only when it round-trips, else in hex bits, so
parsing the text recovers the exact value.
"""

from __future__ import annotations

import re
import struct
from typing import Any

from msltrans.ir.types import _split_top

_CONST_RE = re.compile(r"arith\.constant\s+(.*?)\s*(?::\s*(\S.*))?$")


def _scalar(token: str, elem: str) -> Any:
    token = token.strip()
    if token in ("true", "false"):
        return token == "true"
    if token.startswith(("0x", "0X")) and elem.startswith(("f", "bf")):
        return _float_from_bits(int(token, 16), elem)
    if elem.startswith(("f", "bf")) or any(c in token for c in ".eEn"):
        if token in ("inf", "-inf", "nan"):
            return float(token)
        return float(token)
    return int(token, 0)


def _float_from_bits(bits: int, elem: str) -> float:
    if elem == "f32":
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    if elem == "f16":
        return struct.unpack("<e", struct.pack("<H", bits))[0]
    if elem == "bf16":
        return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    if elem == "f64":
        return struct.unpack("<d", struct.pack("<Q", bits))[0]
    raise ValueError(f"hex float constant of type {elem}")


def _element_of(type_text: str) -> str:
    m = re.match(r"tensor<(?:\d+x)*([\w]+)", type_text)
    return m.group(1) if m else type_text.strip()


def constant_attrs(op_name: str, line: str) -> dict[str, Any]:
    """{"value": scalar | tuple, "splat": bool} for arith.constant; {} otherwise."""
    if op_name != "arith.constant":
        return {}
    m = _CONST_RE.search(line)
    if not m:
        return {}
    payload, type_text = m.group(1), (m.group(2) or "")
    # `arith.constant true` has no type suffix; `1024 : i32`.
    elem = _element_of(type_text) if type_text else "i1"
    if payload.startswith("dense<") and payload.endswith(">"):
        body = payload[len("dense<"):-1].strip()
        if body.startswith('"'):
            return {"value": None, "splat": False, "raw": body}  # hex blob: lowering refuses
        if body.startswith("["):
            flat = body.replace("[", "").replace("]", "")
            vals = tuple(_scalar(t, elem) for t in _split_top(flat) if t)
            return {"value": vals, "splat": False}
        return {"value": _scalar(body, elem), "splat": True}
    return {"value": _scalar(payload, elem), "splat": False}
