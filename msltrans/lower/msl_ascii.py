"""7-bit ASCII for every byte of MSL msltrans emits.

`torch.mps.compile_shader` hands the source to Metal through
`[NSString stringWithCString:... encoding:NSASCIIStringEncoding]` (PyTorch's
`MetalShaderLibrary::compileLibrary`, aten/src/ATen/native/mps/OperationUtils.mm): a byte above
0x7F makes that string nil, and the kernel never compiles. The MSL text comes from three
places, and each is kept ASCII:

- the templates and support libraries under msltrans/templates (tests/test_msl_ascii.py reads
  every file there);
- names msltrans derives from the user's Python (`identifier`: a non-ASCII letter becomes its
  ASCII base letter where Unicode decomposes it, else `u<hex>`);
- user text quoted in comments (source lines, file and function names): `ascii_source`
  escapes any non-ASCII character that reaches a comment as `\\u{hex}`, and refuses one
  anywhere else (that would be a lowering bug, never user data).
"""

from __future__ import annotations

import re
import unicodedata

from msltrans.errors import MetalNonRecoverableError

# Comments, string and character literals of C++ (what may legitimately hold user text).
_LEXEME = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{{{ord(match.group(0)):x}}}"


def escape_text(text: str) -> str:
    """`text` with every non-ASCII character written as `\\u{hex}` (for comments)."""
    return _NON_ASCII.sub(_escape, text)


def identifier(name: str) -> str:
    """An ASCII spelling of a Python identifier: `größe` -> `groudf_e`, `café` -> `cafe`.
    Distinct names may meet (the emitter's name table keeps emitted names distinct)."""
    if name.isascii():
        return name
    out = []
    for ch in name:
        if ch.isascii():
            out.append(ch)
            continue
        base = "".join(c for c in unicodedata.normalize("NFKD", ch) if c.isascii())
        out.append(base if base else f"u{ord(ch):x}_")
    return "".join(out)


def ascii_source(source: str, where: str | None = None) -> str:
    """The finished MSL with user text in comments escaped; non-ASCII outside comments and
    literals is a lowering bug and refuses, naming the line."""
    if source.isascii():
        return source
    pieces, last = [], 0
    for match in _LEXEME.finditer(source):
        pieces.append(_code(source, last, match.start(), where))
        pieces.append(escape_text(match.group(0)))
        last = match.end()
    pieces.append(_code(source, last, len(source), where))
    return "".join(pieces)


def _code(source: str, start: int, end: int, where: str | None) -> str:
    text = source[start:end]
    bad = _NON_ASCII.search(text)
    if bad is not None:
        pos = start + bad.start()
        line = source.count("\n", 0, pos) + 1
        raise MetalNonRecoverableError(
            f"the generated MSL has the non-ASCII character {bad.group(0)!r} "
            f"(U+{ord(bad.group(0)):04X}) in code at MSL line {line}: "
            f"{source.splitlines()[line - 1].strip()!r}", location=where,
            hint="torch.mps.compile_shader reads MSL as 7-bit ASCII; this is a msltrans bug, "
                 "please report the kernel")
    return text
