"""Source preparation: what the user's MSL needs before clang can compile it as C++ for
OpenCL, done on the preprocessed text so that macro-generated kernels and declarations are
seen too.

1. Before preprocessing (`mark_source`): the tokens `kernel` become `_MSLK_` (same length, so
   columns stay right; the shim's empty `kernel` macro would otherwise erase them) and the
   attribute `threadgroup(i)` becomes `__msl_tgattr(i)`. A probe line records what
   `threadgroup` expands to.
2. After `clang -E` (`rewrite_threadgroup_decls`): each function-scope `threadgroup T x[N];`
   (illegal outside OpenCL kernels) becomes a reference bound to the runtime's per-group
   arena, keyed by a function-local static (one per declaration and template instantiation).
   Rewrites stay on their line so diagnostics and DWARF lines still match the source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KERNEL_MARK = "_MSLK_"
TG_ATTR_MARK = "__msl_tgattr"
PROBE_BEGIN, PROBE_END = "__msl_probe_begin", "__msl_probe_end"

_RAW_TOKENS = re.compile(
    r"(?P<skip>^[ \t]*#[ \t]*include[^\n]*|//[^\n]*|/\*.*?\*/"
    r"|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*')"
    r"|(?P<kernel>\bkernel\b)|(?P<tgattr>\bthreadgroup\b)(?=\s*\()",
    re.S | re.M)


def mark_source(source: str) -> str:
    """Mark kernels and threadgroup attributes so they survive preprocessing."""

    def replace(match: re.Match[str]) -> str:
        if match.group("kernel"):
            return KERNEL_MARK
        if match.group("tgattr"):
            return TG_ATTR_MARK
        return match.group(0)

    marked = _RAW_TOKENS.sub(replace, source)
    return f"{_mark_included_kernels(marked)}\n{PROBE_BEGIN} threadgroup {PROBE_END}\n"


_INCLUDE_LINE = re.compile(r"^[ \t]*#[ \t]*include\b[^\n]*$", re.M)


def _mark_included_kernels(source: str) -> str:
    """After each #include, make `kernel` in later included headers expand to the marker
    too (the shim defines it empty); `#line` keeps the user's line numbers."""
    out, last = [], 0
    for match in _INCLUDE_LINE.finditer(source):
        line = source.count("\n", 0, match.end()) + 1
        out.append(source[last:match.end()])
        out.append(f"\n#undef kernel\n#define kernel {KERNEL_MARK}\n#line {line + 1}")
        last = match.end()
    out.append(source[last:])
    return "".join(out)


@dataclass
class Preprocessed:
    """Preprocessed text plus which character ranges are user code: the main file and any
    header it includes, except the shim's own headers and clang's built-in buffers."""

    text: str
    user_ranges: list[tuple[int, int]]
    threadgroup_expansion: str
    files: set[str]

    def in_user_code(self, pos: int) -> bool:
        return any(start <= pos < end for start, end in self.user_ranges)


_LINE_MARKER = re.compile(r'^#\s*\d+\s+"((?:\\.|[^"\\])*)"[^\n]*$', re.M)


def split_preprocessed(text: str, shim_dir: str) -> Preprocessed:
    """Find the user's ranges from the line markers and take out the probe line."""
    ranges: list[tuple[int, int]] = []
    files: set[str] = set()
    current, start = "<built-in>", 0

    def is_user(name: str) -> bool:
        return not (name.startswith("<") or name.startswith(shim_dir))

    for marker in _LINE_MARKER.finditer(text):
        if is_user(current):
            ranges.append((start, marker.start()))
        current, start = marker.group(1), marker.end()
        files.add(current)
    if is_user(current):
        ranges.append((start, len(text)))
    probe = re.search(re.escape(PROBE_BEGIN) + r"(.*?)" + re.escape(PROBE_END), text, re.S)
    if probe is None:
        raise ValueError("the threadgroup probe line vanished during preprocessing")
    expansion = probe.group(1).strip()
    text = text[:probe.start()] + " " * (probe.end() - probe.start()) + text[probe.end():]
    return Preprocessed(text, ranges, expansion, files)


_OPEN, _CLOSE = "([{", ")]}"


def previous_significant_index(text: str, pos: int) -> int:
    """Index of the last non-blank character before pos, skipping `# N "file"` marker lines
    (-1 if there is none)."""
    i = pos - 1
    while i >= 0:
        if text[i].isspace():
            i -= 1
            continue
        line_start = text.rfind("\n", 0, i + 1) + 1
        if text[line_start:i + 1].lstrip().startswith("#"):
            i = line_start - 1
            continue
        return i
    return -1


def previous_significant_char(text: str, pos: int) -> str:
    """The last non-blank character before pos, skipping `# N "file"` marker lines."""
    i = previous_significant_index(text, pos)
    return text[i] if i >= 0 else ";"


def find_statement_end(text: str, pos: int) -> int | None:
    """Index of the `;` ending the declaration at pos, or None if it is not a plain one."""
    depth = 0
    for i in range(pos, len(text)):
        ch = text[i]
        if ch in _OPEN:
            if depth == 0 and ch != "[":
                return None   # a function, a braced initialiser, a cast: not ours
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0 and ch in "=*&":
            return None       # pointers, references and initialised variables stay as is
        elif depth == 0 and ch == ";":
            return i
    return None


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside (), [], {} and <> nesting."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


_DECLARATOR = re.compile(r"^(?P<type>.*?)\b(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\]]*\]\s*)*)$",
                         re.S)


def _rewrite_decl(space: str, body: str, counter: list[int], align: str = "") -> str | None:
    """`body` is what follows the threadgroup qualifier up to (not including) the `;`;
    `align`: the N of a leading `alignas(N)`."""
    parts = split_top_level(body)
    first = _DECLARATOR.match(parts[0].strip())
    if first is None or not first.group("type").strip():
        return None
    type_text = " ".join(first.group("type").split())
    declarators = [(first.group("name"), first.group("dims"))]
    for part in parts[1:]:
        match = _DECLARATOR.match(part.strip())
        if match is None or match.group("type").strip():
            return None
        declarators.append((match.group("name"), match.group("dims")))
    alignment = f"alignof({type_text})"
    if align:
        alignment = f"({alignment} > ({align}) ? {alignment} : ({align}))"
    pieces = []
    for name, dims in declarators:
        dims = "".join(dims.split())
        key = f"__msl_tgkey_{counter[0]}"
        # The element type through a typedef: the shim's vector constructors are
        # function-like macros (`uint4(...)`), which `uint4 (*)[N]` would invoke.
        alias = f"__msl_tgtype_{counter[0]}"
        counter[0] += 1
        if dims:
            ref_decl = f"{space} {alias} (&{name}){dims}"
            pointer = f"{space} {alias} (*){dims}"
        else:
            ref_decl = f"{space} {alias} &{name}"
            pointer = f"{space} {alias} *"
        pieces.append(
            f"typedef {type_text} {alias}; static char {key}; {ref_decl} = *({pointer})"
            f"(__SIZE_TYPE__)msl_sim_threadgroup_static(&{key}, sizeof({alias}{dims}), "
            f"{alignment});")
    return " ".join(pieces)


_ALIGNAS = re.compile(r"\balignas\s*\(([^()]*)\)\s*$")


def rewrite_threadgroup_decls(pre: Preprocessed) -> tuple[str, int]:
    """Rewrite function-scope threadgroup declarations; returns (text, how many)."""
    space = pre.threadgroup_expansion
    if not space:
        return pre.text, 0
    tokens = r"\s*".join(re.escape(tok) for tok in re.findall(r"\w+|\S", space))
    pattern = re.compile(r"(?<![\w])" + tokens + r"(?![\w])")
    text = pre.text
    out: list[str] = []
    last, count = 0, [0]
    for match in pattern.finditer(text):
        if match.start() < last or not pre.in_user_code(match.start()):
            continue
        start, align = match.start(), ""
        before = previous_significant_char(text, start)
        if before == ")":
            # `alignas(N) threadgroup T x[M];`: the alignment goes to the allocation.
            spec = _ALIGNAS.search(text, max(0, start - 200), start)
            if spec is not None and previous_significant_char(text, spec.start()) in ";{}":
                start, align, before = spec.start(), spec.group(1).strip(), ";"
        if before not in ";{}":
            continue   # a parameter, a cast or a pointer type: not a declaration statement
        end = find_statement_end(text, match.end())
        if end is None:
            continue
        replacement = _rewrite_decl(space, text[match.end():end], count, align)
        if replacement is None:
            continue
        body = text[start:end + 1]
        if "\n" in body:
            # Keep the line count: the rewrite goes on the first line, newlines follow.
            replacement += "\n" * body.count("\n")
        out.append(text[last:start])
        out.append(replacement)
        last = end + 1
    out.append(text[last:])
    return "".join(out), count[0]
