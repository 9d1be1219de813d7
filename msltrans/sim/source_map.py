"""From a line of generated MSL back to the `@triton.jit` line it came from.

msltrans writes `// <op name>  <file>:<line>` before each op's code (msltrans/lower); the
nearest such comment above an MSL line names the Triton op and the Python line the user
wrote. Faults (out-of-bounds, divergent barriers and SIMD ops, device failures) and race
reports use it, so they point at the kernel's source and not only at generated code.
"""

from __future__ import annotations

import re

_OP_COMMENT = re.compile(r"^\s*//\s+([a-z_]+\.[\w.]+)\s+([^\s:]+:\d+)\s*$")
_WRITES = ("tt.store", "tt.atomic_rmw", "tt.atomic_cas", "tt.descriptor_store", "tt.histogram")


def triton_line(source: str, line: int) -> str | None:
    """'kernel.py:36 (tt.load)' for 1-based MSL `line`, or None (no op comment above it)."""
    lines = source.splitlines()
    for i in range(min(line, len(lines)) - 1, -1, -1):
        match = _OP_COMMENT.match(lines[i])
        if match:
            return f"{match.group(2)} ({match.group(1)})"
        if lines[i].startswith("kernel void"):
            return None   # above the kernel body: program-scope helpers carry no op comment
    return None


def msl_references(text: str, sources: dict[str, str]) -> list[tuple[str, int]]:
    """Every `<name>:<line>` in `text` that points into one of `sources` (by file name)."""
    found = []
    for name in sources:
        for match in re.finditer(re.escape(name) + r":(\d+)", text):
            found.append((name, int(match.group(1))))
    return found


def triton_lines_in(text: str, sources: dict[str, str]) -> list[str]:
    """The Triton lines of every MSL location `text` mentions, in order, without repeats."""
    out: list[str] = []
    for name, line in msl_references(text, sources):
        where = triton_line(sources[name], line)
        if where and where not in out:
            out.append(where)
    return out


def writer_lines(source: str) -> list[str]:
    """The Triton lines of every op that writes device memory (for race reports)."""
    out: list[str] = []
    for line in source.splitlines():
        match = _OP_COMMENT.match(line)
        if match and match.group(1) in _WRITES:
            where = f"{match.group(2)} ({match.group(1)})"
            if where not in out:
                out.append(where)
    return out
