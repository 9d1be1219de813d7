"""The walked module: small frozen dataclasses the lowering reads (no MLIR objects inside)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from msltrans.ir.types import Type


@dataclass(frozen=True)
class Location:
    file: str | None
    line: int | None
    col: int | None
    name: str | None = None  # the Python variable name Triton kept (NameLoc), if any

    def short(self) -> str:
        if self.file is None or self.line is None:
            return "<unknown>"
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}"


UNKNOWN_LOC = Location(None, None, None)


@dataclass(frozen=True)
class Value:
    id: int  # dense per module, stable across walks of the same text
    type: Type
    name: str | None = field(default=None, compare=False)  # hint from the loc ("offsets")


@dataclass(frozen=True)
class Block:
    args: tuple[Value, ...]
    ops: tuple[Op, ...]


@dataclass(frozen=True)
class Region:
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Op:
    name: str
    operands: tuple[Value, ...]
    results: tuple[Value, ...]
    attrs: dict[str, Any] = field(hash=False, compare=False)
    regions: tuple[Region, ...]
    loc: Location
    text: str = ""  # the op's own printed line (no location), for custom-syntax details

    def attr(self, key: str) -> Any:
        return self.attrs[key]


@dataclass(frozen=True)
class Argument:
    value: Value
    name: str  # Python parameter name
    attrs: dict[str, Any] = field(hash=False, compare=False)

    @property
    def divisibility(self) -> int | None:
        return self.attrs.get("tt.divisibility")

    @property
    def pointer_range(self) -> int | None:
        """32: the launcher saw the argument's whole buffer under 2^31 bytes."""
        return self.attrs.get("tt.pointer_range")


@dataclass(frozen=True)
class Function:
    name: str
    args: tuple[Argument, ...]
    body: Region
    public: bool
    loc: Location


@dataclass(frozen=True)
class Module:
    functions: tuple[Function, ...]
    num_warps: int
    threads_per_warp: int
    num_ctas: int
    target: str | None
    text: str = field(repr=False, default="")

    def function(self, name: str | None = None) -> Function:
        if name is None:
            public = [f for f in self.functions if f.public]
            if len(public) != 1:
                raise ValueError(f"module has public functions {[f.name for f in public]}")
            return public[0]
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)
