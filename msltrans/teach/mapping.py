"""Which source line each TTGIR line and each MSL line comes from.

TTGIR: every op line carries its location (`loc(#locN)`, resolved through the module's alias
table the way `msltrans.ir` does); a region op's location sits on its closing `}`.

MSL: the lowering writes `// <op name>  <file>:<line>` before each op's code; every line up to
the next such comment is that op's. Lines before `kernel void` that no op comment covers
(header comments, includes, layout helpers) are `helper`; lines of the kernel before its
first op comment are `prologue` (signature, scratch, hoisted per-thread terms); the kernel's
closing brace and the launch comment after it are `epilogue`. An op Triton created without
a location (`<unknown>`, e.g. a constant its passes folded) is `unlocated`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from msltrans.ir import text as ir_text
from msltrans.ir.model import Location

MSL_KINDS = ("op", "unlocated", "prologue", "helper", "epilogue")

_OP_COMMENT_RE = re.compile(r"^\s*// (?P<op>[a-z_]\w*\.[\w.]+)  (?P<loc>\S+)\s*$")
_SHORT_LOC_RE = re.compile(r"^(?P<file>.+):(?P<line>\d+)$")
_TTGIR_OP_RE = re.compile(r'^\s*(?:(?:%[\w$.#:-]+(?:, )?)+ = )?(?P<op>[a-z_]\w*\.[\w.]+|"[\w.]+")')
_LAYOUT_ALIAS_RE = re.compile(r"^(?P<alias>#[A-Za-z_]\w*) = (?P<enc>#ttg\.\w+<.*>)\s*$")


@dataclass(frozen=True)
class TtgirLine:
    text: str  # the line without its location
    kind: str  # "op", "layout" (an encoding alias), "loc" (dropped), "other"
    op: str | None = None
    file: str | None = None  # full path, as Triton recorded it
    line: int | None = None
    name: str | None = None  # the Python variable Triton kept, if any
    alias: str | None = None  # layout lines: `#blocked1`


@dataclass(frozen=True)
class MslLine:
    text: str
    kind: str  # one of MSL_KINDS
    op: str | None = None
    file: str | None = None  # base name, as the op comment writes it
    line: int | None = None


def ttgir_lines(module_text: str) -> list[TtgirLine]:
    """The TTGIR as shown: alias lines for locations dropped, each line with its location."""
    aliases = ir_text.read_aliases(module_text)
    out: list[TtgirLine] = []
    open_ops: list[int] = []  # region ops whose location comes with their closing brace
    for raw in module_text.splitlines():
        stripped = raw.strip()
        if ir_text._ALIAS_RE.match(raw):
            continue
        body, loc_text = ir_text._strip_trailing_loc(raw)
        loc = ir_text.resolve_loc_text(loc_text, aliases) if loc_text else None
        body = _drop_locs(body)
        m = _LAYOUT_ALIAS_RE.match(raw)
        if m:
            out.append(TtgirLine(raw, "layout", alias=m.group("alias")))
            continue
        if stripped.startswith("}"):
            if loc is not None and not body.rstrip().endswith("{") and open_ops:
                idx = open_ops.pop()
                head = out[idx]
                out[idx] = _with_loc(head, loc)
                out.append(_with_loc(TtgirLine(body, "op", head.op), loc))
                continue
            out.append(TtgirLine(body, "other"))
            continue
        op_m = _TTGIR_OP_RE.match(raw)
        kind = "op" if op_m or stripped.startswith("module") else "other"
        op = op_m.group("op").strip('"') if op_m else ("builtin.module" if kind == "op" else None)
        line = TtgirLine(body, kind, op)
        if loc is not None:
            line = _with_loc(line, loc)
        if body.rstrip().endswith("{"):
            open_ops.append(len(out))
        out.append(line)
    return out


def _drop_locs(text: str) -> str:
    """Remove the `loc(...)` groups left inside a line (function arguments carry their own)."""
    while (at := text.find(" loc(")) >= 0:
        depth, end = 0, len(text)
        for i in range(at + 1, len(text)):
            if text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
                if depth == 0:
                    end = i + 1
                    break
        text = text[:at] + text[end:]
    return text


def _with_loc(line: TtgirLine, loc: Location) -> TtgirLine:
    if loc.file is None or loc.line is None:
        return TtgirLine(line.text, line.kind, line.op, name=loc.name)
    return TtgirLine(line.text, line.kind, line.op, loc.file, loc.line, loc.name)


def msl_lines(msl: str) -> list[MslLine]:
    """Every MSL line with its op and source line, or the part of the file it belongs to."""
    lines = msl.rstrip("\n").split("\n")
    kernel_at = next((i for i, t in enumerate(lines) if t.startswith("kernel void")), len(lines))
    out: list[MslLine] = []
    current: MslLine | None = None  # the op comment whose code we are in
    closed = False  # past the kernel's closing brace
    for i, text in enumerate(lines):
        if i == kernel_at:
            current = None
        m = _OP_COMMENT_RE.match(text)
        if m and not closed:
            loc = _SHORT_LOC_RE.match(m.group("loc"))
            if loc:
                current = MslLine("", "op", m.group("op"), loc.group("file"),
                                  int(loc.group("line")))
            else:
                current = MslLine("", "unlocated", m.group("op"))
            out.append(MslLine(text, current.kind, current.op, current.file, current.line))
            continue
        if text == "}":  # a function ends at column 0: the kernel, or a helper before it
            current = None
            closed = closed or i > kernel_at
            out.append(MslLine(text, "epilogue" if i > kernel_at else "helper"))
            continue
        if closed:
            out.append(MslLine(text, "epilogue"))
        elif current is not None:
            out.append(MslLine(text, current.kind, current.op, current.file, current.line))
        else:
            out.append(MslLine(text, "prologue" if i >= kernel_at else "helper"))
    return out
