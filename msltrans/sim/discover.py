"""Finding the kernels in preprocessed MSL: plain `kernel void f(...)`, template kernels and
their explicit instantiations (`template [[host_name("n")]] [[kernel]] void f<T>(...);` or
MLX's `... decltype(f<T>) f<T>;`), at global scope or inside (nested) namespaces: the entry
calls the kernel by its qualified name, the host name stays the unqualified one, as in Metal."""

from __future__ import annotations

import re
from dataclasses import dataclass

from msltrans.abi.limits import MAX_THREADS_PER_THREADGROUP
from msltrans.sim.errors import CompileError
from msltrans.sim.prepare import KERNEL_MARK, Preprocessed
from msltrans.sim.signatures import KernelSignature, eval_index, parse_params

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


# The scanner's state (open braces, a pending `namespace x`) at the end of a text's first
# part, by that part: every kernel's preprocessed text starts with the same shim headers.
_STATES: dict[str, tuple[tuple[list[str] | None, ...], list[str] | None]] = {}
_STATES_KEPT = 8


def namespace_scopes(text: str, positions: list[int], resume_at: int = 0) -> dict[int, str]:
    """For each position, the enclosing named namespaces as a prefix: "" or "::a::b::".

    Unnamed namespaces add nothing (their members are found through the enclosing one).
    `resume_at`: a line start at or before every position, where the state of the scan of
    the text before it may be remembered from an earlier call with the same first part."""
    wanted = sorted(set(positions))
    result: dict[int, str] = {}
    if not wanted:
        return result
    stack: list[list[str] | None] = []   # per open brace: the namespace names it opens, or None
    pending: list[str] | None = None     # a `namespace x` whose `{` comes next
    if resume_at and wanted[0] >= resume_at:
        head = text[:resume_at]
        state = _STATES.get(head)
        if state is None:
            stack, pending = _scan(text, 0, resume_at, [], None, [], {})
            if len(_STATES) >= _STATES_KEPT:
                _STATES.pop(next(iter(_STATES)))
            _STATES[head] = (tuple(stack), pending)
        else:
            stack, pending = list(state[0]), state[1]
    else:
        resume_at = 0
    _scan(text, resume_at, len(text), stack, pending, wanted, result)
    return result


def _scan(text: str, start: int, end: int, stack: list[list[str] | None],
          pending: list[str] | None, wanted: list[int],
          result: dict[int, str]) -> tuple[list[list[str] | None], list[str] | None]:
    """Scan text[start:end] from the given state, filling `result` for `wanted`; the state
    after it (a token is wholly before `end`: literals end on their line)."""
    next_wanted = 0

    def prefix() -> str:
        names = [name for entry in stack if entry is not None for name in entry]
        return "::" + "".join(f"{name}::" for name in names) if names else ""

    for match in _SCOPE_TOKENS.finditer(text, start, end):
        while next_wanted < len(wanted) and wanted[next_wanted] < match.start():
            result[wanted[next_wanted]] = prefix()
            next_wanted += 1
        if wanted and next_wanted == len(wanted):
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
    return stack, pending


@dataclass
class _Head:
    base: str
    template_args: str
    params: str | None
    end: int


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


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


def _mark_span(text: str, match: re.Match[str]) -> tuple[int, int]:
    """The kernel marker's extent: the whole `[[...]]` list when the marker is one of its
    attributes (`[[kernel, max_total_threads_per_threadgroup(N)]]`, MLX's spelling), else
    the marker itself."""
    opened, closed = text.rfind("[[", 0, match.start()), text.rfind("]]", 0, match.start())
    if opened >= 0 and opened > closed and match.group(0) == KERNEL_MARK:
        end = text.find("]]", match.end())
        if end >= 0 and text.find("[[", match.end(), end) < 0:
            return opened, end + 2
    return match.start(), match.end()


def _skip_blanks_and_attributes(text: str, pos: int, attrs: list[str],
                                spans: list[tuple[int, int]] | None = None) -> int:
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if text.startswith("[[", pos):
            end = text.index("]]", pos) + 2
            attrs.append(text[pos:end])
            if spans is not None:
                spans.append((pos, end))
            pos = end
        elif text.startswith(KERNEL_MARK, pos):
            pos += len(KERNEL_MARK)
        else:
            return pos


def _parse_head(text: str, pos: int, attrs: list[str],
                spans: list[tuple[int, int]] | None = None) -> _Head | None:
    pos = _skip_blanks_and_attributes(text, pos, attrs, spans)
    match = re.compile(r"(?:static\s+)?(?:inline\s+)?void\b\s*").match(text, pos)
    if match is None and not text.startswith("decltype", pos):
        return None
    if match is not None:
        pos = _skip_blanks_and_attributes(text, match.end(), attrs)
    if text.startswith("decltype", pos):
        pos = _skip_balanced(text, text.index("(", pos), "(", ")")
        pos = _skip_blanks_and_attributes(text, pos, attrs)
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


def _is_template_definition(text: str, pos: int, attrs: list[str]) -> bool:
    """Whether the kernel marker at pos is preceded by `template <...>`."""
    i = pos
    while True:
        while i > 0 and text[i - 1].isspace():
            i -= 1
        if text.endswith("]]", 0, i):
            start = text.rfind("[[", 0, i)
            attrs.append(text[start:i])
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


_MAX_THREADS = re.compile(r"\bmax_total_threads_per_threadgroup\s*\(")


def max_threads(attrs: list[str], kernel: str) -> int | None:
    """The kernel's `[[max_total_threads_per_threadgroup(N)]]` (MSL 5.1.3), None without one.

    Metal fails to make the pipeline state when N exceeds the device's 1024 threads per
    threadgroup, and a dispatch of more than N threads per threadgroup fails: the simulator
    refuses both. An N that names template parameters (known only per instantiation) is not
    evaluated: such a kernel keeps the device's 1024."""
    found = None
    for attribute in attrs:
        match = _MAX_THREADS.search(attribute)
        if match is None:
            continue
        end = _skip_balanced(attribute, match.end() - 1, "(", ")")
        try:
            found = eval_index(attribute[match.end():end - 1])
        except (ValueError, SyntaxError):
            return None
        if not 1 <= found <= MAX_THREADS_PER_THREADGROUP:
            raise CompileError(
                f"kernel `{kernel}`: [[max_total_threads_per_threadgroup({found})]]: Metal "
                f"allows 1 to {MAX_THREADS_PER_THREADGROUP} threads per threadgroup, and "
                "fails to make the pipeline state for more (MSL 5.1.3)")
    return found


def find_kernels(pre: Preprocessed) -> tuple[list[KernelSignature], str]:
    """The kernels, and the text with the kernel markers blanked out."""
    text = pre.text
    primaries: list[tuple[str, str, int, list[str]]] = []   # template kernel definitions
    plain: list[tuple[str, _Head, int, list[str]]] = []
    instantiations: list[tuple[str, _Head, int, list[str]]] = []
    consumed: set[int] = set()
    blank: list[tuple[int, int]] = []
    for match in _INSTANTIATION.finditer(text):
        if not pre.in_user_code(match.start()):
            continue
        attrs: list[str] = []
        spans: list[tuple[int, int]] = []
        head = _parse_head(text, match.end(), attrs, spans)
        if head is None or not head.template_args:
            continue
        marks = [m.start() for m in _MARK.finditer(text, match.end(), head.end)]
        host = [name for attribute in attrs for name in _host_names(attribute)]
        if not host and not marks:
            continue
        consumed.update(marks)
        # C++ allows no attributes after `template` in an explicit instantiation.
        blank.extend(spans)
        instantiations.append((host[0] if host else head.base + head.template_args, head,
                               match.start(), attrs))
    for match in _MARK.finditer(text):
        if match.start() in consumed:
            continue
        attrs = []
        start, end = _mark_span(text, match)
        if (start, end) != (match.start(), match.end()):
            attrs.append(text[start:end])
        head = _parse_head(text, end, attrs)
        if head is None or head.params is None:
            continue
        if _is_template_definition(text, start, attrs):
            primaries.append((head.base, head.params, match.start(), attrs))
        else:
            host = [name for attribute in attrs for name in _host_names(attribute)]
            plain.append((host[0] if host else _unqualified(head.base), head, match.start(),
                          attrs))
    positions = [item[2] for item in plain] + [item[2] for item in instantiations]
    # The user's code around the first kernel follows the shim's headers, the same text in
    # every kernel's build: the scan resumes at the start of that range of user code.
    wanted = positions + [item[2] for item in primaries]
    around = [start for start, end in pre.user_ranges if wanted and start <= min(wanted) < end]
    scopes = namespace_scopes(text, wanted,
                              resume_at=_line_start(text, around[0]) if around else 0)
    by_name = {base: (params, attrs) for base, params, _, attrs in primaries}
    by_qualified = {_qualify(scopes[pos], base): (params, attrs)
                    for base, params, pos, attrs in primaries}
    kernels = [KernelSignature(name, _callee(scopes[pos], head.base),
                               parse_params(head.params or "", name), max_threads(attrs, name))
               for name, head, pos, attrs in plain]
    for name, head, pos, attrs in instantiations:
        params, primary_attrs = by_qualified.get(_qualify(scopes[pos], head.base),
                                                 by_name.get(head.base, (head.params, [])))
        if params is None:
            raise CompileError(f"kernel `{name}`: no parameter list for `{head.base}`")
        callee = _callee(scopes[pos], head.base) + head.template_args
        kernels.append(KernelSignature(name, callee, parse_params(params, name),
                                       max_threads([*primary_attrs, *attrs], name)))
    if blank:
        chars = list(text)
        for start, end in blank:
            chars[start:end] = " " * (end - start)
        text = "".join(chars)
    first = _MARK.search(text)  # (the markers are in the user's code, after the shim)
    blanked = text if first is None else (
        text[:first.start()]
        + _MARK.sub(lambda m: " " * len(m.group(0)), text[first.start():]))
    names = [k.name for k in kernels]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise CompileError(f"kernel names defined twice: {sorted(duplicates)}")
    return kernels, blanked
