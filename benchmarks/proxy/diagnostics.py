"""Diagnostic variants of an attention forward's MSL: where does its KV loop lose against the
GEMM? Each variant removes or moves one part of every loop that runs simdgroup MMAs, by
editing the emitted text; they compute something else (or race) and are only timed:

- `no exp2`: `precise::exp2(x)` -> `(x)` (the exponentials' cost);
- `no rescale`: the accumulator's `acc * alpha` multiply -> `acc` (the rescale's cost);
- `no loop barriers`: every `threadgroup_barrier` inside the loop removed (their cost; races);
- `loads first`: each global load of the loop body (with the address arithmetic it needs)
  moved above the loop's first `tt.dot`, so the V tile's load is in flight during QKᵀ and
  the softmax (a schedule change only: the same values, so not a diagnostic of loss but a
  candidate for the lowering).

Blocks are the lowering's op comments (`// tt.load  file.py:41`) at the loop body's indent.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_OP = re.compile(r"^( *)// ([a-z_]+\.[a-z_0-9]+)  \S+:\d+$")
_DEF = re.compile(r"^ *(?:(?:device|threadgroup|constant|const) )*[a-z_0-9]+\*? "
                  r"([A-Za-z_][A-Za-z_0-9]*)(?:\[\d+\])?(?: =|;)")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def _mma_loops(lines: list[str]) -> list[tuple[int, int]]:
    """(first body line, closing line) of every innermost-level `for` whose body holds a
    simdgroup MMA and whose body is the op level (ops as `// op  file:line` comments)."""
    out = []
    for i, line in enumerate(lines):
        m = re.match(r"^( *)for \(", line)
        if not m:
            continue
        ind = m.group(1)
        end = next(j for j in range(i + 1, len(lines)) if lines[j] == ind + "}")
        body = lines[i + 1:end]
        inner = ind + "    "
        if any("simdgroup_multiply_accumulate" in x for x in body) and any(
                (mm := _OP.match(x)) and mm.group(1) == inner for x in body):
            out.append((i + 1, end))
    return out


def _blocks(lines: list[str], start: int, end: int) -> list[tuple[int, int, str]]:
    ind = None
    heads = []
    for j in range(start, end):
        m = _OP.match(lines[j])
        if m and (ind is None or m.group(1) == ind):
            ind = m.group(1)
            heads.append((j, m.group(2)))
    return [(a, heads[k + 1][0] if k + 1 < len(heads) else end, op)
            for k, (a, op) in enumerate(heads)]


def _defined(lines: list[str]) -> set[str]:
    return {m.group(1) for x in lines if (m := _DEF.match(x))}


def loads_first(source: str) -> str | None:
    lines = source.split("\n")
    moved_any = False
    for start, end in reversed(_mma_loops(lines)):
        blocks = _blocks(lines, start, end)
        dots = [k for k, b in enumerate(blocks) if b[2] == "tt.dot"]
        if not dots:
            continue
        first = dots[0]
        late_loads = [k for k, b in enumerate(blocks) if k > first and "load" in b[2]]
        if not late_loads:
            continue
        # backward slice of the late loads among the blocks after the first dot
        take: set[int] = set(late_loads)
        for k in range(max(late_loads), first, -1):
            if k not in take:
                continue
            used = set(_IDENT.findall("\n".join(lines[blocks[k][0]:blocks[k][1]])))
            for p in range(first + 1, k):
                if _defined(lines[blocks[p][0]:blocks[p][1]]) & used:
                    take.add(p)
        dot_defs = _defined(lines[blocks[first][0]:blocks[first][1]])
        for k in take:  # nothing moved may need the first dot or the softmax after it
            used = set(_IDENT.findall("\n".join(lines[blocks[k][0]:blocks[k][1]])))
            if used & dot_defs:
                return None
        moved = [x for k in sorted(take) for x in lines[blocks[k][0]:blocks[k][1]]]
        rest = [x for k in range(first, len(blocks)) if k not in take
                for x in lines[blocks[k][0]:blocks[k][1]]]
        lines[blocks[first][0]:blocks[-1][1]] = moved + rest
        moved_any = True
    return "\n".join(lines) if moved_any else None


def no_exp2(source: str) -> str | None:
    return source.replace("precise::exp2(", "(") if "precise::exp2(" in source else None


def no_rescale(source: str) -> str | None:
    """The rescale is the loop's widest elementwise `arith.mulf` (the accumulator's
    registers times a broadcast row vector)."""
    lines = source.split("\n")
    hits = 0
    for start, end in _mma_loops(lines):
        widest, at = 0, None
        for a, b, op in _blocks(lines, start, end):
            if op != "arith.mulf":
                continue
            m = re.search(r"msl_r < (\d+)u", "\n".join(lines[a:b]))
            if m and int(m.group(1)) > widest:
                widest, at = int(m.group(1)), (a, b)
        if at is None:
            continue
        for j in range(*at):
            new = re.sub(r"= (\w+\[msl_r\]) \* \w+\[msl_r\];", r"= \1;", lines[j])
            hits += new != lines[j]
            lines[j] = new
    return "\n".join(lines) if hits else None


def no_loop_barriers(source: str) -> str | None:
    lines = source.split("\n")
    hits = 0
    for start, end in _mma_loops(lines):
        for j in range(start, end):
            if "threadgroup_barrier(" in lines[j]:
                lines[j] = re.sub(r"threadgroup_barrier\([^)]*\);", ";", lines[j])
                hits += 1
    return "\n".join(lines) if hits else None


VARIANTS: dict[str, Callable[[str], str | None]] = {
    "no exp2": no_exp2, "no rescale": no_rescale, "no loop barriers": no_loop_barriers,
    "loads first": loads_first}
