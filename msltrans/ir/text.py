"""What the Python bindings do not expose, read from the module's printed text.

`mod.str()` (with debug locations) prints ops in pre-order, one op per line, aliases
(`#loc12 = loc(...)`) at the end. We read: each op's line (attribute dicts, float/dense
constants, custom syntax), its location (ops without results have no binding for it), and
function argument attributes (`tt.divisibility`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from msltrans.ir.model import UNKNOWN_LOC, Location
from msltrans.ir.types import _split_top

_TRITON_LIB = "/triton/language/"  # tl.sum & co. are inlined from here
_ALIAS_RE = re.compile(r"^(#loc\d*) = (loc\(.*\))\s*$")
# SSA names: letters, digits and `$._-` (MLIR prints constants as `%c-7_i32`), `#n`, `:n`.
_OP_RE = re.compile(r'^\s*(?:(?:%[\w$.#:-]+(?:, )?)+ = )?([a-z_][\w]*\.[\w.]+|"[\w.]+")')
_TRAIL_LOC_RE = re.compile(r"\s*loc\((#loc\d*|.*?)\)\s*(\{)?\s*$")


@dataclass(frozen=True)
class OpText:
    name: str
    text: str  # the line without its trailing location
    loc: Location


def _unescape(text: str) -> str:
    """An MLIR string literal's contents as text: the printer writes bytes outside printable
    ASCII (a UTF-8 file or variable name) as `\\XX` hex pairs."""
    if "\\" not in text:
        return text
    raw = re.sub(rb"\\(\\|[0-9A-Fa-f]{2})",
                 lambda m: m.group(1) if m.group(1) == b"\\" else bytes([int(m.group(1), 16)]),
                 text.encode("utf-8"))
    return raw.decode("utf-8", errors="replace")


def _resolve_loc(expr: str, aliases: dict[str, str], depth: int = 0) -> Location:
    """Resolve `loc(...)` text (or an alias) to the innermost file:line:col and name."""
    expr = expr.strip()
    if depth > 32:
        return UNKNOWN_LOC
    if expr.startswith("#loc"):
        return _resolve_loc(aliases.get(expr, "loc(unknown)"), aliases, depth + 1)
    if expr.startswith("loc(") and expr.endswith(")"):
        expr = expr[4:-1].strip()
    if expr == "unknown":
        return UNKNOWN_LOC
    m = re.match(r'^"([^"]*)":(\d+):(\d+)', expr)
    if m:
        return Location(_unescape(m.group(1)), int(m.group(2)), int(m.group(3)))
    m = re.match(r'^"([^"]*)"\((.*)\)$', expr)  # NameLoc("name"(child))
    if m:
        child = _resolve_loc(m.group(2), aliases, depth + 1)
        return Location(child.file, child.line, child.col, _unescape(m.group(1)))
    m = re.match(r"^callsite\((.*) at (.*)\)$", expr)
    if m:  # inlined: the callee's line, unless the callee is Triton's own library code
        callee = _resolve_loc(m.group(1), aliases, depth + 1)
        if callee.file is None or _TRITON_LIB in callee.file.replace("\\", "/"):
            caller = _resolve_loc(m.group(2), aliases, depth + 1)
            return Location(caller.file, caller.line, caller.col, callee.name or caller.name)
        return callee
    m = re.match(r"^fused\[(.*)\]$", expr)
    if m:
        return _resolve_loc(_split_top(m.group(1))[0], aliases, depth + 1)
    if expr.startswith("#loc"):
        return _resolve_loc(expr, aliases, depth + 1)
    return UNKNOWN_LOC


def resolve_loc_text(text: str, aliases: dict[str, str]) -> Location:
    return _resolve_loc(text, aliases)


def read_aliases(module_text: str) -> dict[str, str]:
    aliases = {}
    for line in module_text.splitlines():
        m = _ALIAS_RE.match(line)
        if m:
            aliases[m.group(1)] = m.group(2)
    return aliases


def _strip_trailing_loc(line: str) -> tuple[str, str | None]:
    """Split `... loc(#loc3)` (or `... loc(#loc3) {`) into the op text and the loc text."""
    idx = line.rfind(" loc(")
    if idx < 0:
        return line.rstrip(), None
    tail = line[idx + 1:]
    depth, end = 0, None
    for i, ch in enumerate(tail):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                end = i + 1
                break
    if end is None:
        return line.rstrip(), None
    rest = tail[end:].strip()
    return (line[:idx] + (" " + rest if rest else "")).rstrip(), tail[:end]


def read_op_lines(module_text: str) -> list[OpText]:
    """Every op of the module in pre-order (the walker zips these with its own op tree)."""
    aliases = read_aliases(module_text)
    ops: list[OpText] = []
    open_ops: list[int] = []  # ops whose region braces are open; their loc follows `}`
    for raw in module_text.splitlines():
        if _ALIAS_RE.match(raw) or not raw.strip() or raw.lstrip().startswith("^"):
            continue
        stripped = raw.strip()
        if stripped.startswith("}"):
            body, loc_text = _strip_trailing_loc(stripped)
            if body.endswith("{"):  # `} else {`: the same op continues
                continue
            if open_ops:
                idx = open_ops.pop()
                if loc_text is not None and ops[idx].loc == UNKNOWN_LOC:
                    old = ops[idx]
                    ops[idx] = OpText(old.name, old.text, _resolve_loc(loc_text, aliases))
            continue
        m = _OP_RE.match(raw)
        if stripped.startswith("module"):
            name = "builtin.module"
        elif m:
            name = m.group(1).strip('"')
        else:
            continue
        body, loc_text = _strip_trailing_loc(stripped)
        loc = _resolve_loc(loc_text, aliases) if loc_text else UNKNOWN_LOC
        ops.append(OpText(name, body, loc))
        if body.endswith("{"):
            open_ops.append(len(ops) - 1)
    return ops


# ---- attribute values --------------------------------------------------------------------

def parse_attr_value(text: str) -> Any:
    """`1024 : i32` → 1024, `true` → True, `array<i32: 1, 0>` → (1, 0), `"s"` → "s".

    Anything else is returned as its text (lowerings that need it refuse or parse further).
    """
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    m = re.match(r"^(-?\d+)\s*(?::\s*\w+)?$", text)
    if m:
        return int(m.group(1))
    m = re.match(r"^array<\w+(?::\s*(.*))?>$", text)
    if m:
        body = m.group(1)
        return tuple(int(x) for x in body.split(",")) if body else ()
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if text.startswith("[") and text.endswith("]"):
        return tuple(parse_attr_value(p) for p in _split_top(text[1:-1]) if p)
    return text


def parse_attr_dict(text: str) -> dict[str, Any]:
    """Parse a printed attribute dictionary body (`a = 1 : i32, b = array<i32: 0>`)."""
    out: dict[str, Any] = {}
    for item in _split_top(text):
        if not item:
            continue
        key, sep, val = item.partition("=")
        key = key.strip().strip('"')
        out[key] = parse_attr_value(val) if sep else True
    return out


def trailing_attr_dict(op_text: str) -> dict[str, Any]:
    """The `{...}` attribute dictionary of an op line (the last closed top-level braces).

    Braces inside `<...>` (inline layouts like `#ttg.blocked<{...}>`) are not attributes.
    """
    text = op_text.replace("->", "  ")
    angle, depth, start, found = 0, 0, None, None
    for i, ch in enumerate(text):
        if ch == "<":
            angle += 1
        elif ch == ">":
            angle -= 1
        elif angle == 0 and ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif angle == 0 and ch == "}":
            depth -= 1
            if depth == 0 and start is not None:
                found = (start, i)
    if found is None:
        return {}
    return parse_attr_dict(op_text[found[0] + 1:found[1]])


def property_dict(op_text: str) -> dict[str, Any]:
    """Properties of a generic-form op (`"tt.reduce"(%x) <{axis = 0 : i32}> ({`)."""
    m = re.search(r'^\s*(?:%[^=]*= )?"[\w.]+"\([^)]*\)\s*<\{(.*?)\}>', op_text)
    return parse_attr_dict(m.group(1)) if m else {}


_BARE_SYMBOL = re.compile(r"@([A-Za-z_$.\-][\w$.\-]*|\d+)")
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}


def symbol_ref(text: str) -> tuple[str, int] | None:
    """The first MLIR symbol reference in `text` (`@name` or `@"quoted name"`): its name,
    with a quoted one's escapes decoded, and the index just past it; None without one.

    Triton names each specialisation of a `noinline` helper by its constant arguments, and a
    name with characters outside MLIR's bare identifiers (`-`, `(`, spaces) prints quoted."""
    at = text.find("@")
    if at < 0:
        return None
    if text.startswith('@"', at):
        out, i = [], at + 2
        while i < len(text) and text[i] != '"':
            if text[i] == "\\" and i + 1 < len(text):
                nxt = text[i + 1]
                if nxt in _ESCAPES:
                    out.append(_ESCAPES[nxt])
                    i += 2
                    continue
                out.append(chr(int(text[i + 1:i + 3], 16)))
                i += 3
                continue
            out.append(text[i])
            i += 1
        if i >= len(text):
            raise ValueError(f"unterminated quoted symbol in {text!r}")
        return "".join(out), i + 1
    m = _BARE_SYMBOL.match(text, at)
    return (m.group(1), m.end()) if m else None


def func_arg_texts(func_line: str) -> list[str]:
    """The argument list of a `tt.func` line, one entry per argument."""
    sym = symbol_ref(func_line)
    start = func_line.index("(", sym[1] if sym else 0)
    depth = 0
    for i in range(start, len(func_line)):
        if func_line[i] == "(":
            depth += 1
        elif func_line[i] == ")":
            depth -= 1
            if depth == 0:
                return [a for a in _split_top(func_line[start + 1:i]) if a]
    raise ValueError("unbalanced tt.func argument list")


def arg_attrs(arg_text: str) -> dict[str, Any]:
    m = re.search(r"\{(.*)\}", arg_text)
    return parse_attr_dict(m.group(1)) if m else {}


def arg_name(arg_text: str, aliases: dict[str, str]) -> str | None:
    """The Python parameter name from the argument's NameLoc."""
    m = re.search(r"loc\((.*)\)\s*$", arg_text)
    if not m:
        return None
    return _resolve_loc("loc(" + m.group(1) + ")", aliases).name
