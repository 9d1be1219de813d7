"""Every `[[...]]` attribute in the user's MSL must be one Metal (or C++) defines.

clang, compiling MSL as C++ for OpenCL, knows none of Metal's attributes and ignores them
with a warning the simulator has to silence: so a misspelt `[[bufer(0)]]` or
`[[thread_position_in_grd]]` would be dropped without a word, and the parameter bound to
whatever index came next. Apple's compiler rejects those; so does this check, with the
spelling it probably meant.

Sources: MSL specification §5.1 (function attributes: kernel, host_name,
max_total_threads_per_threadgroup, user_annotation, ...), §5.2.1 (buffer, texture, sampler,
threadgroup), §5.2.3.6 Table 5.8 (kernel function input attributes), §2.13 (argument buffer
`id`), §5.8 (function_constant); C++17 §10.6 standard attributes.
"""

from __future__ import annotations

import difflib
import re

from msltrans.sim.errors import CompileError

# Table 5.8: built-in inputs of kernel functions.
KERNEL_INPUTS = frozenset({
    "dispatch_quadgroups_per_threadgroup", "dispatch_simdgroups_per_threadgroup",
    "dispatch_threads_per_threadgroup", "grid_origin", "grid_size",
    "quadgroup_index_in_threadgroup", "quadgroups_per_threadgroup",
    "simdgroup_index_in_threadgroup", "simdgroups_per_threadgroup",
    "thread_execution_width", "thread_index_in_quadgroup", "thread_index_in_simdgroup",
    "thread_index_in_threadgroup", "thread_position_in_grid",
    "thread_position_in_threadgroup", "threadgroup_position_in_grid",
    "threadgroups_per_grid", "threads_per_grid", "threads_per_simdgroup",
    "threads_per_threadgroup",
})
RESOURCES = frozenset({"buffer", "texture", "sampler", "threadgroup", "threadgroup_imageblock",
                       "id", "function_constant", "stage_in", "payload",
                       "visible_function_table", "intersection_function_table",
                       "imageblock_data", "color", "raster_order_group"})
FUNCTION = frozenset({"kernel", "vertex", "fragment", "visible", "stitchable", "object",
                      "mesh", "intersection", "host_name", "max_total_threads_per_threadgroup",
                      "user_annotation", "function_groups", "early_fragment_tests", "patch"})
CXX = frozenset({"noreturn", "carries_dependency", "deprecated", "fallthrough", "nodiscard",
                 "maybe_unused", "likely", "unlikely", "no_unique_address"})
KNOWN = KERNEL_INPUTS | RESOURCES | FUNCTION | CXX
# Vendor namespaces clang itself checks (it warns on an unknown clang::/gnu:: attribute).
VENDOR_NAMESPACES = ("clang", "gnu")

_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
_NAME = re.compile(r"\s*((?:[A-Za-z_]\w*\s*::\s*)?[A-Za-z_]\w*)\s*(\(.*\))?\s*$", re.S)


def split_attribute_list(body: str) -> list[str]:
    """`buffer(0), user_annotation("a,b")` → the attributes, split at top-level commas."""
    items, depth, start, i = [], 0, 0, 0
    while i < len(body):
        ch = body[i]
        if ch in "\"'":
            end = _LITERAL.match(body, i)
            i = end.end() if end else i + 1
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(body[start:i])
            start = i + 1
        i += 1
    items.append(body[start:])
    return [item for item in items if item.strip()]


def check_attribute(attribute: str, where: str, extra: frozenset[str] = frozenset()) -> str:
    """The attribute's name, or a CompileError if Metal/C++ has no such attribute."""
    match = _NAME.match(attribute)
    if match is None:
        raise CompileError(f"{where}: cannot read the attribute `[[{attribute.strip()}]]`")
    name = re.sub(r"\s+", "", match.group(1))
    if "::" in name:
        space = name.split("::", 1)[0]
        if space in VENDOR_NAMESPACES:
            return name
        raise CompileError(f"{where}: unknown attribute namespace in `[[{attribute.strip()}]]`")
    if name in KNOWN or name in extra:
        return name
    guess = difflib.get_close_matches(name, sorted(KNOWN), n=1, cutoff=0.75)
    hint = f" (did you mean `{guess[0]}`?)" if guess else ""
    raise CompileError(f"{where}: unknown attribute `[[{attribute.strip()}]]`{hint}; Metal's "
                       "compiler rejects it, and the simulator will not guess what it means")


_MARKER = re.compile(r'#\s*(\d+)\s+"[^"\n]*"[^\n]*')


def line_of(text: str, pos: int) -> int:
    """The user's line for a position of preprocessed text (from the `# N "file"` markers)."""
    end = pos
    while True:
        newline = text.rfind("\n", 0, end)
        start = newline + 1
        marker = _MARKER.match(text, start)
        if marker is not None and start < pos:
            return int(marker.group(1)) + text.count("\n", marker.end() + 1, pos)
        if newline < 0:
            return text.count("\n", 0, pos) + 1
        end = newline


def check_source(text: str, in_user_code, name: str, extra: frozenset[str]) -> None:  # noqa: ANN001
    """Check every `[[...]]` in the user's part of preprocessed `text`."""
    i = 0
    while True:
        i = text.find("[[", i)
        if i < 0:
            return
        if not in_user_code(i):
            i += 2
            continue
        end = text.find("]]", i + 2)
        if end < 0:
            return
        body = text[i + 2:end]
        if "[" in body or ";" in body or "{" in body:
            i += 2   # not an attribute (nested subscripts, a lambda in an index)
            continue
        where = f"{name}:{line_of(text, i)}"
        for attribute in split_attribute_list(body):
            check_attribute(attribute, where, extra)
        i = end + 2
