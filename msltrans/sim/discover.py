"""Finding the kernels in preprocessed MSL: plain `kernel void f(...)`, template kernels and
their explicit instantiations (`template [[host_name("n")]] [[kernel]] void f<T>(...);` or
MLX's `... decltype(f<T>) f<T>;`), at global scope or inside (nested) namespaces: the entry
calls the kernel by its qualified name, the host name stays the unqualified one, as in Metal."""

from __future__ import annotations

import re
from dataclasses import dataclass

from msltrans.sim.errors import CompileError
from msltrans.sim.prepare import KERNEL_MARK, Preprocessed
from msltrans.sim.signatures import KernelSignature, parse_params

_HOST_NAME = re.compile(r'host_name\s*\(((?:\s*"(?:\\.|[^"\\])*")+)\s*\)')


def _host_names(attribute: str) -> list[str]:
    """host_name("a" "b") -> ["ab"]: adjacent literals concatenate (macros build names)."""
    return ["".join(re.findall(r'"((?:\\.|[^"\\])*)"', m)) for m in _HOST_NAME.findall(attribute)]
_MARK = re.compile(r"\[\[\s*" + KERNEL_MARK + r"\s*\]\]|\b" + KERNEL_MARK + r"\b")
_INSTANTIATION = re.compile(r"\btemplate\s*(?=\[\[)")


# Tokens that matter for namespace nesting: literals (their braces do not count), the word
# `namespace` and braces.
_SCOPE_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|\bnamespace\b|[{}]')
# What may follow `namespace` before the `{` of a namespace definition (not `using namespace
# x;` or an alias `namespace a = b;`): attributes, then `a`, `a::b`, `a::inline b` or nothing.
_NAMESPACE_HEAD = re.compile(
    r"\s*(?:\[\[.*?\]\]\s*)*(?:inline\s+)?"
    r"([A-Za-z_]\w*(?:\s*::\s*(?:inline\s+)?[A-Za-z_]\w*)*)?\s*\{", re.S)


def namespace_scopes(text: str, positions: list[int]) -> dict[int, str]:
    """For each position, the enclosing named namespaces as a prefix: "" or "::a::b::".

    Unnamed namespaces add nothing (their members are found through the enclosing one)."""
    wanted = sorted(set(positions))
    result: dict[int, str] = {}
    stack: list[list[str] | None] = []   # per open brace: the namespace names it opens, or None
    pending: list[str] | None = None     # a `namespace x` whose `{` comes next
    next_wanted = 0

    def prefix() -> str:
        names = [name for entry in stack if entry is not None for name in entry]
        return "::" + "".join(f"{name}::" for name in names) if names else ""

    for match in _SCOPE_TOKENS.finditer(text):
        while next_wanted < len(wanted) and wanted[next_wanted] < match.start():
            result[wanted[next_wanted]] = prefix()
            next_wanted += 1
        if next_wanted == len(wanted):
            break
        token = match.group(0)
        if token == "namespace":
            head = _NAMESPACE_HEAD.match(text, match.end())
            if head is not None:
                names = (head.group(1) or "").replace("::", " ").split()
                pending = [name for name in names if name != "inline"]
        elif token == "{":
            stack.append(pending)
            pending = None
        elif token == "}":
            if stack:
                stack.pop()
    for pos in wanted[next_wanted:]:
        result[pos] = prefix()
    return result


@dataclass
class _Head:
    base: str
    template_args: str
    params: str | None
    end: int


def _skip_balanced(text: str, pos: int, open_ch: str, close_ch: str) -> int:
    """pos is at open_ch; returns the index just past its matching close_ch."""
    depth = 0
    for i in range(pos, len(text)):
        if text[i] == open_ch:
            depth += 1
        elif text[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
    raise CompileError(f"unbalanced `{open_ch}` in a kernel declaration")


def _skip_blanks_and_attributes(text: str, pos: int, host: list[str],
                                spans: list[tuple[int, int]] | None = None) -> int:
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if text.startswith("[[", pos):
            end = text.index("]]", pos) + 2
            host.extend(_host_names(text[pos:end]))
            if spans is not None:
                spans.append((pos, end))
            pos = end
        elif text.startswith(KERNEL_MARK, pos):
            pos += len(KERNEL_MARK)
        else:
            return pos


def _parse_head(text: str, pos: int, host: list[str],
                spans: list[tuple[int, int]] | None = None) -> _Head | None:
    pos = _skip_blanks_and_attributes(text, pos, host, spans)
    match = re.compile(r"(?:static\s+)?(?:inline\s+)?void\b\s*").match(text, pos)
    if match is None and not text.startswith("decltype", pos):
        return None
    if match is not None:
        pos = _skip_blanks_and_attributes(text, match.end(), host)
    if text.startswith("decltype", pos):
        pos = _skip_balanced(text, text.index("(", pos), "(", ")")
        pos = _skip_blanks_and_attributes(text, pos, host)
    name = re.compile(r"[A-Za-z_][\w:]*").match(text, pos)
    if name is None:
        return None
    pos = name.end()
    while pos < len(text) and text[pos].isspace():
        pos += 1
    template_args = ""
    if text.startswith("<", pos):
        end = _skip_balanced(text, pos, "<", ">")
        template_args, pos = text[pos:end], end
    while pos < len(text) and text[pos].isspace():
        pos += 1
    params = None
    if text.startswith("(", pos):
        end = _skip_balanced(text, pos, "(", ")")
        params, pos = text[pos + 1:end - 1], end
    return _Head(name.group(0), template_args, params, pos)


def _is_template_definition(text: str, pos: int, host: list[str]) -> bool:
    """Whether the kernel marker at pos is preceded by `template <...>`."""
    i = pos
    while True:
        while i > 0 and text[i - 1].isspace():
            i -= 1
        if text.endswith("]]", 0, i):
            start = text.rfind("[[", 0, i)
            host.extend(_host_names(text[start:i]))
            i = start
            continue
        break
    if not text.endswith(">", 0, i):
        return False
    depth, j = 0, i - 1
    while j >= 0:
        if text[j] == ">":
            depth += 1
        elif text[j] == "<":
            depth -= 1
            if depth == 0:
                break
        j -= 1
    return re.search(r"\btemplate\s*$", text[:j]) is not None


def _unqualified(name: str) -> str:
    return name.rsplit("::", 1)[-1]


def _qualify(scope: str, name: str) -> str:
    """`name` as written inside namespace `scope` ("" or "::a::b::"), fully qualified."""
    return name if name.startswith("::") else (scope or "::") + name


def _callee(scope: str, name: str) -> str:
    """How the entry (at global scope) calls it; global kernels keep their plain name."""
    return _qualify(scope, name) if scope else name


def find_kernels(pre: Preprocessed) -> tuple[list[KernelSignature], str]:
    """The kernels, and the text with the kernel markers blanked out."""
    text = pre.text
    primaries: list[tuple[str, str, int]] = []   # template kernel definitions
    plain: list[tuple[str, _Head, int]] = []
    instantiations: list[tuple[str, _Head, int]] = []
    consumed: set[int] = set()
    blank: list[tuple[int, int]] = []
    for match in _INSTANTIATION.finditer(text):
        if not pre.in_user_code(match.start()):
            continue
        host: list[str] = []
        spans: list[tuple[int, int]] = []
        head = _parse_head(text, match.end(), host, spans)
        if head is None or not head.template_args:
            continue
        marks = [m.start() for m in _MARK.finditer(text, match.end(), head.end)]
        if not host and not marks:
            continue
        consumed.update(marks)
        # C++ allows no attributes after `template` in an explicit instantiation.
        blank.extend(spans)
        instantiations.append((host[0] if host else head.base + head.template_args, head,
                               match.start()))
    for match in _MARK.finditer(text):
        if match.start() in consumed:
            continue
        host = []
        head = _parse_head(text, match.end(), host)
        if head is None or head.params is None:
            continue
        if _is_template_definition(text, match.start(), host):
            primaries.append((head.base, head.params, match.start()))
        else:
            plain.append((host[0] if host else _unqualified(head.base), head, match.start()))
    positions = [pos for *_, pos in plain] + [pos for *_, pos in instantiations]
    scopes = namespace_scopes(text, positions + [pos for *_, pos in primaries])
    by_name = {base: params for base, params, _ in primaries}
    by_qualified = {_qualify(scopes[pos], base): params for base, params, pos in primaries}
    kernels = [KernelSignature(name, _callee(scopes[pos], head.base),
                               parse_params(head.params or "", name))
               for name, head, pos in plain]
    for name, head, pos in instantiations:
        params = by_qualified.get(_qualify(scopes[pos], head.base),
                                  by_name.get(head.base, head.params))
        if params is None:
            raise CompileError(f"kernel `{name}`: no parameter list for `{head.base}`")
        callee = _callee(scopes[pos], head.base) + head.template_args
        kernels.append(KernelSignature(name, callee, parse_params(params, name)))
    chars = list(text)
    for start, end in blank:
        chars[start:end] = " " * (end - start)
    blanked = _MARK.sub(lambda m: " " * len(m.group(0)), "".join(chars))
    names = [k.name for k in kernels]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise CompileError(f"kernel names defined twice: {sorted(duplicates)}")
    return kernels, blanked
