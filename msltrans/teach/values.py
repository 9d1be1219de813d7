"""The tensor values of a TTGIR module and their layouts: what the pictures are drawn for."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

from msltrans.ir import text as ir_text
from msltrans.ir.model import Block, Module, Value
from msltrans.ir.types import TensorType

_ENC_ALIAS_RE = re.compile(r"^(#\w+) = (#ttg\.\w+<.*>)\s*$")


@dataclass
class LayoutUse:
    """One (encoding, shape) some tensor value of the kernel has."""

    encoding: str  # the full text msltrans.layout decodes
    shape: tuple[int, ...]
    short: str  # as the TTGIR writes it: `#blocked1`, `#ttg.slice<{dim = 0, parent = #blocked}>`
    values: list[str] = field(default_factory=list)  # Python names (or the op) of its values

    @property
    def anchor(self) -> str:
        return "layout-" + re.sub(r"[^\w]+", "-", f"{self.short}-{'x'.join(map(str, self.shape))}"
                                  ).strip("-")

    @property
    def shape_text(self) -> str:
        return "x".join(map(str, self.shape))


def read_module_text(ttgir: str) -> Module:
    """Walk TTGIR text (as printed, with locations) with Triton's own parser."""
    from msltrans.ir import read_ttgir_file

    fd, name = tempfile.mkstemp(suffix=".ttgir", prefix="msltrans_teach_")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(ttgir)
        return read_ttgir_file(name)
    finally:
        os.unlink(name)


def encoding_aliases(ttgir: str) -> dict[str, str]:
    """Full encoding text → the alias the module text uses for it (`#blocked1`)."""
    out = {}
    for line in ttgir.splitlines():
        m = _ENC_ALIAS_RE.match(line)
        if m and not ir_text._ALIAS_RE.match(line):
            out[m.group(2)] = m.group(1)
    return out


def shorten(encoding: str, aliases: dict[str, str]) -> str:
    """Write an encoding as the module text does (aliases for the encodings it names)."""
    if encoding in aliases:
        return aliases[encoding]
    for full, alias in sorted(aliases.items(), key=lambda kv: -len(kv[0])):
        encoding = encoding.replace(full, alias)
    return encoding


def tensor_values(module: Module) -> Iterator[tuple[Value, str]]:
    """Every tensor value with a layout (op results and block arguments), with the op name
    that defines it ("argument" for block arguments)."""
    def walk(block: Block) -> Iterator[tuple[Value, str]]:
        for v in block.args:
            yield v, "block argument"
        for op in block.ops:
            for v in op.results:
                yield v, op.name
            for region in op.regions:
                for inner in region.blocks:
                    yield from walk(inner)

    for fn in module.functions:
        for block in fn.body.blocks:
            for v, op in walk(block):
                if isinstance(v.type, TensorType) and v.type.encoding:
                    yield v, op


def layout_uses(ttgir: str, module: Module | None = None) -> list[LayoutUse]:
    """The distinct (encoding, shape) pairs of the module's tensors, in order of first use."""
    module = module or read_module_text(ttgir)
    aliases = encoding_aliases(ttgir)
    uses: dict[tuple[str, tuple[int, ...]], LayoutUse] = {}
    for v, op in tensor_values(module):
        t = v.type
        assert isinstance(t, TensorType) and t.encoding
        key = (t.encoding, tuple(t.shape))
        if key not in uses:
            uses[key] = LayoutUse(t.encoding, tuple(t.shape), shorten(t.encoding, aliases))
        label = v.name or f"({op})"
        if label not in uses[key].values:
            uses[key].values.append(label)
    return list(uses.values())
