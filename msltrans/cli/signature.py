"""What `msltrans dump` assumes about a kernel's arguments when no launch shows them.

A real launch gives Triton the types and its launcher's specialisations: a tensor whose
`data_ptr() % 16 == 0` becomes `tt.divisibility = 16` (which decides vector widths, e.g.
`sizePerThread = [4]` for fp32 vector add), an int that is a multiple of 16 gets the same
attribute and an int equal to 1 becomes a constant. Without a launch, the dump assumes what
a typical launch has: pointers are `*fp32`, 16-byte aligned (torch allocations are) and
into buffers under 2 GB (`tt.pointer_range = 32`: msltrans then holds their pointers as
32-bit offsets), ints are `i32` and no multiple of 16. Which argument is a pointer is read
from the kernel: its name ends in `_ptr`, or it is the base of the address
`tl.load`/`tl.store`/`tl.atomic_*` reads (`tl.load(X + offs)`). The assumptions are
printed; `--signature`, `--constexpr`, `--unaligned`, `--over-2gb` and `--divisible`
override them.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

_ADDRESS_CALLS = {"load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_and",
                  "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas", "make_block_ptr",
                  "atomic_poll", "make_tensor_descriptor"}
_PASS_THROUGH = {"multiple_of", "max_contiguous", "max_constancy", "to", "cast",
                 "pointer_type", "reshape", "broadcast_to", "expand_dims"}


class MissingSpecialization(Exception):
    """The flags do not pin down the kernel's signature (the CLI then tries a run)."""


@dataclass
class Assumed:
    signature: dict[str, str]
    constexprs: dict[str, Any]
    divisible: list[str] = field(default_factory=list)   # tt.divisibility = 16
    small: list[str] = field(default_factory=list)       # tt.pointer_range = 32
    notes: list[str] = field(default_factory=list)        # one line per assumption

    def attrs(self, arg_names: list[str]) -> dict[tuple[int, ...], list[list[Any]]]:
        """ASTSource's `attrs`: the launcher's divisibility and buffer-size specialisation."""
        attrs: dict[tuple[int, ...], list[list[Any]]] = {}
        for a in self.divisible:
            attrs.setdefault((arg_names.index(a),), []).append(["tt.divisibility", 16])
        for a in self.small:
            attrs.setdefault((arg_names.index(a),), []).append(["tt.pointer_range", 32])
        return attrs

    def header(self) -> str:
        if not self.notes:
            return ""
        return "\n".join(["// msltrans dump: no launch to copy the arguments from; assumed "
                          "(--signature/--constexpr/--unaligned/--over-2gb/--divisible override):",
                          *(f"//   {n}" for n in self.notes)])


def _leftmost(node: ast.AST, aliases: dict[str, set[str]]) -> set[str]:
    """The names an address expression is based on: the left end of its + / - chain."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id, set()) | {node.id}
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _leftmost(node.left, aliases)
    if isinstance(node, ast.Subscript):
        return _leftmost(node.value, aliases)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in _PASS_THROUGH:
            if isinstance(func, ast.Attribute) and name in ("to", "reshape", "broadcast_to"):
                return _leftmost(func.value, aliases)
            return _leftmost(node.args[0], aliases) if node.args else set()
    if isinstance(node, ast.IfExp):
        return _leftmost(node.body, aliases) | _leftmost(node.orelse, aliases)
    return set()


def pointer_params(fn: Any) -> set[str]:
    """Parameters used as the base of a load/store/atomic address (see the module doc)."""
    try:
        source = textwrap.dedent(inspect.getsource(fn.fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return set()
    aliases: dict[str, set[str]] = {}
    # Two passes, so an alias assigned after its use in the text (loops) still counts.
    for _ in range(2):
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bases = _leftmost(node.value, aliases)
                for target in targets:
                    if isinstance(target, ast.Name) and bases:
                        aliases.setdefault(target.id, set()).update(bases)
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in _ADDRESS_CALLS:
            continue
        first = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg in ("pointer", "ptr", "base")), None)
        if first is not None:
            found |= _leftmost(first, aliases)
    return found & {p.name for p in fn.params}


def infer(fn: Any, given: dict[str, str], constexprs: dict[str, Any],
          unaligned: set[str], divisible: set[str], parse_constexpr: Any,
          large: frozenset[str] = frozenset()) -> Assumed:
    """Signature, constexprs and specialisations for every parameter; MissingSpecialization
    names the flags for constexprs that have no value."""
    unknown = sorted((set(given) | set(constexprs) | unaligned | divisible | large)
                     - {p.name for p in fn.params})
    if unknown:
        raise MissingSpecialization(f"kernel `{fn.__name__}` has no argument(s) "
                                    f"{', '.join(unknown)}")
    signature: dict[str, str] = {}
    values: dict[str, Any] = {}
    missing: list[str] = []
    notes: list[str] = []
    aligned: list[str] = []
    small: list[str] = []
    pointers = pointer_params(fn)
    for p in fn.params:
        if p.is_constexpr:
            signature[p.name] = "constexpr"
            if p.name in constexprs:
                values[p.name] = parse_constexpr(constexprs[p.name])
            elif p.default is not inspect.Parameter.empty:
                values[p.name] = p.default
                notes.append(f"{p.name} = {p.default!r} (constexpr: its Python default)")
            else:
                missing.append(f"--constexpr {p.name}=VALUE")
            continue
        why = "given"
        if p.name in given:
            ty = given[p.name]
        elif isinstance(p.annotation_type, str) and p.annotation_type:
            ty, why = p.annotation_type, "its annotation"
        elif p.name.endswith("_ptr") or p.name in pointers:
            ty = "*fp32"
            why = ("its name ends in _ptr" if p.name.endswith("_ptr")
                   else "it is the base of a load/store address")
        else:
            ty, why = "i32", "an int below 2**31"
        signature[p.name] = ty
        if ty.startswith("*"):
            if p.name not in unaligned:
                aligned.append(p.name)
                notes.append(f"{p.name}: {ty} ({why}), 16-byte aligned (tt.divisibility=16, as "
                             f"Triton's launcher specialises a torch tensor; --unaligned "
                             f"{p.name})")
            else:
                notes.append(f"{p.name}: {ty} ({why}), not assumed aligned (--unaligned)")
            if p.name not in large:
                small.append(p.name)
                notes.append(f"{p.name}: a buffer under 2 GB (tt.pointer_range=32, as msltrans's "
                             f"launcher specialises one; --over-2gb {p.name})")
        elif p.name in divisible:
            aligned.append(p.name)
            notes.append(f"{p.name}: {ty} ({why}), a multiple of 16 (tt.divisibility=16)")
        else:
            notes.append(f"{p.name}: {ty} ({why}), not a multiple of 16 (--divisible "
                         f"{p.name}; --signature {p.name}=i64 for a 64-bit int)")
    if missing:
        raise MissingSpecialization(
            f"kernel `{fn.__name__}` needs {'; '.join(missing)} (adjust types as needed)")
    return Assumed(signature, values, aligned, small=small, notes=notes)
