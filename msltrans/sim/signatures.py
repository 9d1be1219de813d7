"""Kernel signatures read from the preprocessed source: which functions are kernels, their
host names, and how each parameter is bound (buffer index, threadgroup index, built-in)."""

from __future__ import annotations

import ast
import re
from dataclasses import asdict, dataclass
from typing import Any

from msltrans.abi.limits import MAX_BUFFER_INDEX
from msltrans.sim.errors import CompileError
from msltrans.sim.prepare import TG_ATTR_MARK, split_top_level

# Built-in inputs: attribute name -> (abi.h field, whether it is a 3-vector quantity).
BUILTINS: dict[str, tuple[str, bool]] = {
    "thread_position_in_grid": ("thread_position_in_grid", True),
    "threadgroup_position_in_grid": ("threadgroup_position_in_grid", True),
    "thread_position_in_threadgroup": ("thread_position_in_threadgroup", True),
    "threads_per_threadgroup": ("threads_per_threadgroup", True),
    "threadgroups_per_grid": ("threadgroups_per_grid", True),
    "threads_per_grid": ("threads_per_grid", True),
    "thread_index_in_threadgroup": ("thread_index_in_threadgroup", False),
    "simdgroup_index_in_threadgroup": ("simdgroup_index_in_threadgroup", False),
    "thread_index_in_simdgroup": ("thread_index_in_simdgroup", False),
    "threads_per_simdgroup": ("threads_per_simdgroup", False),
    "simdgroups_per_threadgroup": ("simdgroups_per_threadgroup", False),
    "thread_execution_width": ("threads_per_simdgroup", False),
}

# What `coherent(device)` becomes in the preprocessed source (include/msl_sim/types.h).
COHERENT_MARK = 'annotate("msl_sim_coherent")'

# The entry's thread-info parameter (entries.py), named so no kernel called `t` is shadowed.
ENTRY_THREAD = "__msl_sim_t"

_SCALARS = {"uint": "unsigned int", "unsigned": "unsigned int", "unsigned int": "unsigned int",
            "uint32_t": "unsigned int", "ushort": "unsigned short",
            "unsigned short": "unsigned short", "uint16_t": "unsigned short", "int": "int",
            "short": "short"}
_VECTOR = re.compile(r"^(uint|ushort)([23])$|^vec<\s*(uint|ushort)\s*,\s*([23])\s*>$")


@dataclass(frozen=True)
class Param:
    name: str
    type_text: str
    kind: str          # "buffer", "threadgroup" or "builtin"
    index: int = -1    # buffer / threadgroup index
    builtin: str = ""  # attribute name for built-ins

    @property
    def is_constant(self) -> bool:
        return bool(re.search(r"\bconstant\b|__constant", self.type_text))

    @property
    def is_coherent(self) -> bool:
        """Declared `coherent(device)` (MSL 4.8; the shim's types.h turns the qualifier into
        this annotation, which the preprocessed signature keeps)."""
        return COHERENT_MARK in self.type_text


@dataclass(frozen=True)
class KernelSignature:
    name: str          # host name: what lib.<name> is called
    callee: str        # C++ expression to call: f or f<float>
    params: tuple[Param, ...]
    # [[max_total_threads_per_threadgroup(N)]] (MSL 5.1.3): a dispatch of more threads per
    # threadgroup fails. None: the kernel has none (the device's 1024 hold).
    max_threads: int | None = None

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "callee": self.callee,
                "params": [asdict(p) for p in self.params], "max_threads": self.max_threads}

    @staticmethod
    def from_json(data: dict[str, object]) -> KernelSignature:
        raw_params: list[dict[str, Any]] = data["params"]  # type: ignore[assignment]
        params = tuple(Param(**p) for p in raw_params)
        limit = data.get("max_threads")
        return KernelSignature(str(data["name"]), str(data["callee"]), params,
                               None if limit is None else int(limit))  # type: ignore[call-overload]


def builtin_value(param: Param) -> str:
    """The C++ expression the entry passes for a built-in parameter."""
    field, is_vector = BUILTINS[param.builtin]
    type_text = re.sub(r"\b(const|metal::)\s*", "", param.type_text).strip()
    type_text = re.sub(r"\bmetal::", "", type_text)
    if type_text in _SCALARS:
        source = f"{ENTRY_THREAD}->{field}[0]" if is_vector else f"{ENTRY_THREAD}->{field}"
        return f"({_SCALARS[type_text]})({source})"
    match = _VECTOR.match(type_text)
    if match and is_vector:
        element = _SCALARS[match.group(1) or match.group(3)]
        width = int(match.group(2) or match.group(4))
        items = ", ".join(f"({element}){ENTRY_THREAD}->{field}[{d}]" for d in range(width))
        return f"{param.type_text}{{{items}}}"
    raise CompileError(f"unsupported type `{param.type_text}` for [[{param.builtin}]] "
                       f"parameter `{param.name}`")


def eval_index(text: str) -> int:
    """Attribute indices after preprocessing: integer literals and + - * arithmetic."""
    tree = ast.parse(re.sub(r"(?<=\d)[uUlL]+\b", "", text.strip()), mode="eval")

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            left, right = walk(node.left), walk(node.right)
            return {ast.Add: left + right, ast.Sub: left - right,
                    ast.Mult: left * right}[type(node.op)]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        raise ValueError(text)

    return walk(tree)


_ATTRIBUTE = re.compile(r"\[\[(.*?)\]\]", re.S)


def _buffer_index(kernel: str, name: str, arg: str | None) -> int:
    index = eval_index(arg or "0")
    if not 0 <= index <= MAX_BUFFER_INDEX:
        raise CompileError(f"kernel `{kernel}`: [[buffer({index})]] on `{name}`: Metal's buffer "
                           f"argument table has indices 0 to {MAX_BUFFER_INDEX}")
    return index


def parse_params(text: str, kernel: str) -> tuple[Param, ...]:
    from msltrans.sim.attributes import CXX, check_attribute, split_attribute_list

    params: list[Param] = []
    pending: list[tuple[str, str]] = []   # (name, type) of parameters without an index
    for raw in split_top_level(text):
        if not raw.strip() or raw.strip() == "void":
            continue
        attributes = [a.strip() for a in _ATTRIBUTE.findall(raw)]
        decl = " ".join(_ATTRIBUTE.sub(" ", raw).split())
        match = re.match(r"^(.*?)\b([A-Za-z_]\w*)$", decl)
        if match is None:
            raise CompileError(f"kernel `{kernel}`: cannot read parameter `{decl}`")
        type_text, name = match.group(1).strip(), match.group(2)
        param = None
        items = [item for attribute in attributes for item in split_attribute_list(attribute)]
        for item in items:
            where = f"kernel `{kernel}`, parameter `{name}`"
            word = check_attribute(item, where, frozenset({TG_ATTR_MARK}))
            head = re.match(r"^\s*[\w:]+\s*(?:\((.*)\))?\s*$", item, re.S)
            arg = head.group(1) if head else None
            if word == "buffer":
                param = Param(name, type_text, "buffer", _buffer_index(kernel, name, arg))
            elif word == TG_ATTR_MARK:
                param = Param(name, type_text, "threadgroup", eval_index(arg or "0"))
            elif word in BUILTINS:
                param = Param(name, type_text, "builtin", builtin=word)
            elif word not in CXX and "::" not in word:
                raise CompileError(f"{where}: [[{item.strip()}]] is not supported by the "
                                   "simulator")
        if param is None:
            if "*" not in type_text and "&" not in type_text:
                raise CompileError(f"kernel `{kernel}`: parameter `{name}` has neither a "
                                   "[[buffer(i)]] nor a built-in attribute")
            pending.append((name, type_text))
            params.append(Param(name, type_text, "pending"))
        else:
            params.append(param)
    used = {p.index for p in params if p.kind == "buffer"}
    resolved, next_free = [], 0
    for param in params:
        if param.kind == "pending":
            # Metal gives a parameter without [[buffer(i)]] the next index nobody claimed.
            while next_free in used:
                next_free += 1
            used.add(next_free)
            if next_free > MAX_BUFFER_INDEX:
                raise CompileError(f"kernel `{kernel}`: parameter `{param.name}` would take "
                                   f"buffer index {next_free}; Metal's buffer argument table "
                                   f"ends at {MAX_BUFFER_INDEX}")
            param = Param(param.name, param.type_text, "buffer", next_free)
        resolved.append(param)
    return tuple(resolved)
