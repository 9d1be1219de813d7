"""What Apple's toolchain rejects in MSL and clang, compiling it as C++ for OpenCL, accepts.

The simulator is the only oracle msltrans has off a Mac, so it refuses what the real path
(`torch.mps.compile_shader` -> `MTLDevice newLibraryWithSource:`) would refuse. The rules,
each with its source, are the table `msltrans.msl_subset.RULES` (docs/msl-subset.md):

- `check_ascii`: the source string is 7-bit ASCII (headers it includes are not checked:
  torch converts only the string).
- `check_user_text` (the user's part of the preprocessed text): no `goto`; no lambda below
  MSL 3.2.
- `check_ir` (the unoptimised LLVM IR of the whole translation unit): no implicit conversion
  of float to bfloat in the user's functions, no call-graph cycle through a user function
  (recursion), no indirect call (a function pointer).
- The shim itself rejects the rest at compile time (`static_assert`): SIMD-group permute
  functions on bool/long/ulong (msl_sim/simd.h) and atomic_float add/sub in threadgroup
  memory (msl_sim/atomic.h); clang rejects half <-> bfloat conversions by itself.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable

from msltrans.msl_subset import RULES
from msltrans.sim.errors import CompileError
from msltrans.sim.prepare import previous_significant_index

_RULES = {rule.key: rule for rule in RULES}


def refusal(key: str, where: str, what: str, line_text: str = "") -> CompileError:
    """The CompileError for rule `key`: where, what was found, why Apple rejects it and the
    source line."""
    rule = _RULES[key]
    quoted = f"\n    {line_text.strip()}" if line_text.strip() else ""
    return CompileError(f"{where}: {what}: {rule.why} [{rule.source}]{quoted}")


def _line(sources: dict[str, str], file: str | None, line: int) -> str:
    lines = sources.get(file or "", "").split("\n")
    return lines[line - 1] if 0 < line <= len(lines) else ""


def check_ascii(text: str, name: str) -> None:
    """`text` (a file's contents) has no byte above 0x7F, or CompileError naming the first."""
    if text.isascii():
        return
    index = next(i for i, ch in enumerate(text) if ord(ch) > 0x7F)
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    ch = text[index]
    encoded = ch.encode("utf-8", "surrogateescape")
    described = (f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed character')}"
                 if ord(ch) <= 0x10FFFF and not 0xDC80 <= ord(ch) <= 0xDCFF
                 else f"byte 0x{ord(ch) - 0xDC00:02X}")
    rule = _RULES["non_ascii"]
    raise CompileError(
        f"non-ASCII character at {name}:{line}:{column}: {described} "
        f"(bytes {' '.join(f'0x{b:02X}' for b in encoded)}); {rule.why} [{rule.source}]")


# Preprocessed text: no comments are left; string and character literals are skipped.
_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|\bgoto\b|\[\[|\]\]|\[')
# From MSL 3.2 lambdas are allowed: only `goto` is looked for (outside literals).
_GOTO_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|\bgoto\b')
# A `[` after one of these starts an expression, so it is a lambda introducer (a subscript
# follows a name, `)` or `]`; an attribute is `[[`).
_EXPRESSION_START = set("=(,{;?:!&|+-*/%<>~^")
_LINE_MARKER = re.compile(r'^#\s*(\d+)\s+"((?:\\.|[^"\\])*)"[^\n]*$', re.M)


def _where(text: str, pos: int, name: str) -> str:
    """`file:line` of a position in preprocessed text, from its `# N "file"` markers."""
    marker = None
    for match in _LINE_MARKER.finditer(text, 0, pos):
        marker = match
    if marker is None:
        return f"{name}:{text.count(chr(10), 0, pos) + 1}"
    line = int(marker.group(1)) + text.count("\n", marker.end() + 1, pos)
    return f"{marker.group(2)}:{line}"


def _previous_token(text: str, pos: int) -> str:
    """The last non-blank character before pos (or `return`), skipping marker lines."""
    i = previous_significant_index(text, pos)
    if i < 0:
        return ";"
    if text[i].isalnum() or text[i] == "_":
        word = re.search(r"\w+$", text[:i + 1])
        return word.group(0) if word else text[i]
    return text[i]


def _closing_bracket(text: str, pos: int) -> int | None:
    depth = 0
    for i in range(pos, min(len(text), pos + 4000)):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return i
    return None


def check_user_text(text: str, in_user_code: Callable[[int], bool], name: str,
                    version: int) -> None:
    """`goto` and (below MSL 3.2) lambdas in the user's part of preprocessed `text`."""
    for match in (_GOTO_TOKENS if version >= 320 else _TOKENS).finditer(text):
        token = match.group(0)
        if token[0] in "\"'" or token in ("[[", "]]") or not in_user_code(match.start()):
            continue
        if token == "goto":
            raise refusal("goto", _where(text, match.start(), name), "a `goto` statement")
        if version >= 320:
            continue
        before = _previous_token(text, match.start())
        if before not in _EXPRESSION_START and before != "return":
            continue
        close = _closing_bracket(text, match.start())
        after = text[close + 1:close + 200].lstrip() if close is not None else ""
        if after[:1] in ("(", "{", "<") or after.startswith("mutable"):
            raise refusal("lambda", _where(text, match.start(), name),
                          f"a lambda expression at MSL {version // 100}.{version % 100 // 10}")


# --- LLVM IR -------------------------------------------------------------------------------
_DEFINE = re.compile(r"^define [^@\n]*@(\"[^\"]+\"|[\w.$]+)\([^\n]*?(?:!dbg !(\d+))?\s*\{$",
                     re.M)
_META = re.compile(r"^!(\d+) = (?:distinct )?!(\w+)\((.*)\)$", re.M)
_FIELD = re.compile(r"(\w+): (\"(?:\\.|[^\"\\])*\"|[^,]+)")
_DIRECT_CALL = re.compile(r"\b(?:call|invoke)\b[^@%\n]*?@(\"[^\"]+\"|[\w.$]+)\(")
_INDIRECT_CALL = re.compile(r"\b(?:call|invoke)\b(?![^\n]*\basm\b)[^@%\n(]*?\s%[\w.]+\(")
_BF16_TRUNC = re.compile(r"= fptrunc (?:float|half) [^\n]* to bfloat\b[^\n]*!dbg !(\d+)")
_DBG = re.compile(r"!dbg !(\d+)")
_C_STYLE_BF16 = re.compile(r"\(\s*(?:metal\s*::\s*)?bfloat\s*\)")
_FUNCTIONAL_BF16 = re.compile(r"\bbfloat\s*\(\s*[(\s]*$")


class _Module:
    """The parts of a textual LLVM IR module the checks need."""

    def __init__(self, ir: str) -> None:
        # metadata node -> (kind, its fields' text); the fields are read when asked for
        self._meta = {m.group(1): (m.group(2), m.group(3)) for m in _META.finditer(ir)}
        self._fields: dict[str, dict[str, str]] = {}
        self.functions: dict[str, tuple[str | None, str]] = {}   # name -> (subprogram, body)
        for match in _DEFINE.finditer(ir):
            end = ir.find("\n}\n", match.end())
            body = ir[match.end():end if end >= 0 else len(ir)]
            self.functions[match.group(1).strip('"')] = (match.group(2), body)

    def _node(self, node: str) -> tuple[str, dict[str, str]]:
        kind, text = self._meta[node]
        fields = self._fields.get(node)
        if fields is None:
            fields = self._fields[node] = {k: v.strip() for k, v in _FIELD.findall(text)}
        return kind, fields

    def _file_of(self, node: str | None, depth: int = 0) -> str | None:
        if node is None or node not in self._meta or depth > 50:
            return None
        kind, fields = self._node(node)
        if kind == "DIFile":
            return fields.get("filename", "").strip('"')
        if "file" in fields:
            return self._file_of(fields["file"].lstrip("!"), depth + 1)
        return self._file_of(fields.get("scope", "").lstrip("!") or None, depth + 1)

    def location(self, dbg: str | None) -> tuple[str | None, int, int]:
        """(file, line, column) of a DILocation or DISubprogram."""
        if dbg is None or dbg not in self._meta:
            return None, 0, 0
        kind, fields = self._node(dbg)
        scope = fields.get("scope", "").lstrip("!") if kind == "DILocation" else dbg
        return (self._file_of(scope), int(fields.get("line", "0") or 0),
                int(fields.get("column", "0") or 0))

    def display_name(self, function: str) -> str:
        sub = self.functions[function][0]
        if sub is not None and sub in self._meta:
            name = self._node(sub)[1].get("name", "").strip('"')
            if name:
                return name
        return function


def _is_explicit(sources: dict[str, str], file: str, line: int, column: int) -> bool:
    """Whether the conversion at (file, line, column) is written `bfloat(x)` or `(bfloat)x`
    (`static_cast<bfloat>` converts inside the shim). clang puts a functional cast's
    location on its operand, so the text before the column ends in `bfloat(`; a C-style
    cast's location is not its own, so any conversion on a line with one counts as explicit
    (a miss, never a false refusal)."""
    text = sources.get(file)
    if text is None or line <= 0:
        return False
    lines = text.split("\n")
    if line > len(lines):
        return False
    if _C_STYLE_BF16.search(lines[line - 1]):
        return True
    return _FUNCTIONAL_BF16.search(lines[line - 1][:max(column - 1, 0)]) is not None


def _cycle(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """A call path start -> ... -> start, if there is one."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for callee in sorted(graph.get(node, ())):
            if callee == start:
                return path + [start]
            if callee not in seen:
                seen.add(callee)
                stack.append((callee, path + [callee]))
    return None


def check_ir(ir: str, user_files: Iterable[str], sources: dict[str, str]) -> None:
    """Recursion, function pointers and implicit float -> bfloat conversions in the user's
    functions of unoptimised LLVM IR (`sources`: file -> text, to tell explicit casts)."""
    users = set(user_files)
    module = _Module(ir)

    def where(file: str | None, line: int) -> str:
        return f"{file}:{line}" if file else "(unknown line)"

    user_functions = []
    for function, (sub, body) in module.functions.items():
        file, line, _ = module.location(sub)
        if file in users:
            user_functions.append((function, file, line, body))
    graph = {function: {m.group(1).strip('"') for m in _DIRECT_CALL.finditer(body)}
             for function, (_, body) in module.functions.items()}
    for function, file, line, body in user_functions:
        for call in _INDIRECT_CALL.finditer(body):
            dbg = _DBG.search(body, call.start(), body.find("\n", call.start()))
            cfile, cline, _ = module.location(dbg.group(1) if dbg else None)
            raise refusal("function_pointer", where(cfile or file, cline or line),
                          f"an indirect call (a function pointer) in "
                          f"`{module.display_name(function)}`",
                          _line(sources, cfile or file, cline or line))
        # In a template instantiation `T(x)` (explicit) and `T r = x` (implicit) give the
        # same IR, so only non-template functions are checked.
        templated = "<" in module.display_name(function)
        for trunc in () if templated else _BF16_TRUNC.finditer(body):
            tfile, tline, tcol = module.location(trunc.group(1))
            if tfile in users and not _is_explicit(sources, tfile, tline, tcol):
                raise refusal("bfloat_implicit", where(tfile, tline),
                              f"an implicit conversion to bfloat (column {tcol})",
                              _line(sources, tfile, tline))
        path = _cycle(graph, function)
        if path is not None:
            names = " -> ".join(f"`{module.display_name(f)}`" if f in module.functions else f
                                for f in path)
            raise refusal("recursion", where(file, line), f"a recursive call ({names})",
                          _line(sources, file, line))


# clang's alignment check (compiler.py alignment_flags) on every typed access costs hot
# loops their vectorisation (attention ran about twice as long). The rule is about
# threadgroup memory, and clang names each check's type with its address space
# ("'__local uint4'"): the checks of other accesses get a mask of 0, and the optimiser
# removes them.
_TYPE_DESCRIPTOR = re.compile(
    r'^(@[\w.]+) = private unnamed_addr constant \{ i16, i16, \[\d+ x i8\] \} '
    r'\{ i16 -?\d+, i16 -?\d+, \[\d+ x i8\] c"([^"]*)"', re.M)
_CHECK_DATA = re.compile(r"^(@[\w.]+) = private unnamed_addr global \{ \{ ptr, i32, i32 \}, ptr, "
                         r"i8, i8 \} \{ \{ ptr, i32, i32 \} \{ [^}]* \}, ptr (@[\w.]+),", re.M)
_MISMATCH_CALL = re.compile(r"@__ubsan_handle_type_mismatch_v1\(ptr (@[\w.]+), i64 (%[\w.]+)\)")


def keep_threadgroup_alignment_checks(ir: str) -> str:
    """Unoptimised IR with only the alignment checks of threadgroup (`__local`) accesses."""
    if "__ubsan_handle_type_mismatch_v1" not in ir:
        return ir
    local_types = {m.group(1) for m in _TYPE_DESCRIPTOR.finditer(ir) if "__local" in m.group(2)}
    local_checks = {m.group(1) for m in _CHECK_DATA.finditer(ir) if m.group(2) in local_types}
    out, last = [], 0
    for define in _DEFINE.finditer(ir):
        end = ir.find("\n}\n", define.end())
        end = len(ir) if end < 0 else end
        body = ir[define.end():end]
        drop = {m.group(2) for m in _MISMATCH_CALL.finditer(body) if m.group(1) not in local_checks}
        if drop:
            names = "|".join(re.escape(v) for v in sorted(drop))
            body = re.sub(r"(= and i64 (?:" + names + r"), )\d+\b", r"\g<1>0", body)
        out.append(ir[last:define.end()])
        out.append(body)
        last = end
    out.append(ir[last:])
    return "".join(out)
