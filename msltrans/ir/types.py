"""Triton/MLIR types as frozen dataclasses, parsed from their printed form.

`str(value.get_type())` prints layouts inline (`tensor<128xf32, #ttg.blocked<{...}>>`); the
encoding text is kept verbatim and decoded only by `msltrans.layout`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

INT_WIDTHS = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64}
FLOAT_WIDTHS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


@dataclass(frozen=True)
class ScalarType:
    name: str  # MLIR spelling: "i1", "i32", "f32", "bf16", "index", "f8E4M3FN", ...

    @property
    def is_int(self) -> bool:
        return self.name in INT_WIDTHS or self.name == "index"

    @property
    def is_float(self) -> bool:
        return self.name in FLOAT_WIDTHS or self.name.startswith("f8")

    @property
    def bits(self) -> int:
        if self.name == "index":
            return 64
        if self.name.startswith("f8"):
            return 8
        return INT_WIDTHS.get(self.name) or FLOAT_WIDTHS[self.name]

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class PointerType:
    pointee: ScalarType | TensorType
    address_space: int | str = 1

    def __str__(self) -> str:
        if self.address_space == 1:
            return f"!tt.ptr<{self.pointee}>"
        space = self.address_space
        spelled = str(space) if isinstance(space, int) else '"' + space + '"'
        return f"!tt.ptr<{self.pointee}, {spelled}>"


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    element: ScalarType | PointerType
    encoding: str | None  # verbatim layout attribute text, or None in TTIR

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __str__(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        enc = f", {self.encoding}" if self.encoding else ""
        return f"tensor<{dims}x{self.element}{enc}>"


@dataclass(frozen=True)
class OtherType:
    """A type the walker does not model (memdesc, tensordesc, ...); lowerings refuse it."""

    text: str

    def __str__(self) -> str:
        return self.text


Type = ScalarType | PointerType | TensorType | OtherType

_SCALAR_RE = re.compile(r"^(i\d+|f16|bf16|f32|f64|index|f8\w*)$")


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside <>, [], {}, () nesting."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<[{(":
            depth += 1
        elif ch in ">]})":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def parse_type(text: str) -> Type:
    text = text.strip()
    if _SCALAR_RE.match(text):
        return ScalarType(text)
    if text.startswith("!tt.ptr<") and text.endswith(">"):
        inner = _split_top(text[len("!tt.ptr<"):-1])
        # Numbered spaces print as ints; Triton 3.9 names some: `tl.const` pointers are
        # `!tt.ptr<f32, "constant">`.
        space: int | str = 1
        if len(inner) > 1:
            space = int(inner[1]) if inner[1].isdigit() else inner[1].strip('"')
        pointee = parse_type(inner[0])
        if not isinstance(pointee, ScalarType | TensorType):
            return OtherType(text)
        return PointerType(pointee, space)
    if text.startswith("tensor<") and text.endswith(">"):
        parts = _split_top(text[len("tensor<"):-1])
        body, encoding = parts[0], (parts[1] if len(parts) > 1 else None)
        # body: "128x64x!tt.ptr<f32>" or "f32" (0-d)
        dims: list[int] = []
        rest = body
        while (m := re.match(r"^(\d+)x", rest)):
            dims.append(int(m.group(1)))
            rest = rest[m.end():]
        element = parse_type(rest)
        if not isinstance(element, ScalarType | PointerType):
            return OtherType(text)
        return TensorType(tuple(dims), element, encoding)
    return OtherType(text)
