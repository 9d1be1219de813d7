"""The emitter: names, register arrays, MSL lines. The API every op family uses.

A tensor value is a per-thread array `T name[R]` indexed by its layout's register id; a
scalar is a plain variable. Lowerings read operands through `at(v)` ("x[msl_r]" or "x")
and write results through `elementwise`, `declare` + lines, or `render` of a macro.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import NoReturn, TypeVar, cast

from msltrans import msl_version as _versions
from msltrans.abi.limits import THREADGROUP_MEMORY_BYTES
from msltrans.analysis.axis_info import AxisAnalysis
from msltrans.errors import MetalNonRecoverableError
from msltrans.ir.model import Block, Module, Op, Value
from msltrans.ir.types import TensorType
from msltrans.lower import msl_ascii, msl_types
from msltrans.lower.layout_table import LayoutRef, LayoutTable, run_dim
from msltrans.lower.registry import checks, lookup
from msltrans.lower.templates import macro_text, static_text
from msltrans.lower.unroll import cap_unroll

REG = "msl_r"  # the register index in element loops
COHERENT = "coherent(device)"  # MSL 3.2 (section 4.8): lower/memory/coherence.py decides where
LANE, WARP, TID = "msl_lane", "msl_warp", "msl_tid"
_RESERVED = {
    "bool", "char", "short", "int", "long", "half", "float", "double", "bfloat", "uint",
    "kernel", "device", "constant", "threadgroup", "thread", "vertex", "fragment", "using",
    "namespace", "metal", "sizeof", "true", "false", "return", "if", "else", "for", "while",
    "do", "switch", "case", "default", "break", "continue", "struct", "class", "template",
    "typename", "static", "const", "auto", "void", "signed", "unsigned", "new", "delete",
    "this", "operator", "union", "enum", "volatile", "register", "inline", "min", "max",
}


def sanitize(name: str) -> str:
    name = re.sub(r"\W", "_", msl_ascii.identifier(name), flags=re.ASCII)
    if not name or name[0].isdigit():
        name = "v_" + name
    if name in _RESERVED or name.startswith("msl_"):
        name += "_"
    return name


S = TypeVar("S")


@dataclass(eq=False, repr=False)
class Emitter:
    """Everything one function's lowering keeps (the kernel's body, or a noinline helper's in
    ops_call.py): declared here, field by field. An op family's own state is a class of that
    family with a no-argument constructor, reached through `family(ThatClass)`."""

    layouts: LayoutTable = field(default_factory=LayoutTable)
    _: KW_ONLY
    enable_fp_fusion: bool = True  # Triton's option: fmul + fadd -> fma (ops_arith.py)
    # The module (tt.call finds its callees here; None: lowering one function alone).
    module: Module | None = None
    # The pinned-tiles level of the fragment dots (dot/state.py PIN_*; kernel.py tries them
    # in turn until the kernel fits Metal's threadgroup memory). 0: none pinned.
    pin_tiles: int = 0
    # Use analysis of the function (analyse): value id -> number of operand uses, -> the
    # defining op, -> (user op, operand #).
    uses: dict[int, int] = field(default_factory=dict)
    producers: dict[int, Op] = field(default_factory=dict)
    users: dict[int, list[tuple[Op, int]]] = field(default_factory=dict)
    owners: dict[int, Op] = field(default_factory=dict)  # id(a region's terminator) -> its op
    positions: dict[int, tuple[Block, int]] = field(default_factory=dict)  # id(op) -> where
    lines: list[str] = field(default_factory=list)  # the body, indented
    prelude: list[str] = field(default_factory=list)  # program scope (tables, helpers), once
    scratch_bytes: int = 0  # threadgroup scratch the body needs (need_scratch)
    tiles_live: int = 0  # loops whose fragment dots' tiles are pinned, being emitted
    scratch_beside_tiles: int = 0  # the most scratch any user needs while they are
    scratch_uses: int = 0  # need_scratch calls so far (a tile staged earlier still intact?)
    op: Op | None = None  # the op being lowered (for error locations)
    # Axis facts of the function being emitted (msltrans.analysis.axis_info), when known:
    # they let loads and stores go vector-wide (vector_access.py).
    axis: AxisAnalysis | None = None
    # buffer index -> alignment in bytes the emitted accesses assume (MslProgram).
    buffer_alignment: dict[int, int] = field(default_factory=dict)
    msl_version: int = _versions.DEFAULT  # the target (lower_module sets it)
    msl_features: set[str] = field(default_factory=set)  # version-gated features used
    # Pointer values whose MSL type carries coherent(device) (lower/memory/coherence.py).
    coherent_values: frozenset[int] = frozenset()
    # Pointer values held as 32-bit element offsets: value id -> the MSL name of the
    # buffer argument they count from (lower/memory/pointer_offsets.py).
    offset_base: dict[int, str] = field(default_factory=dict)
    # ... and the addresses among them emitted as (argument + base) + offset.
    split_address: dict[int, tuple[Value, Value]] = field(default_factory=dict)
    # Value id -> the layout the value takes instead of its type's, while a chain of ops is
    # emitted a second time in another layout (`relaid`; lower/dot/direct_store.py).
    layout_overrides: dict[int, LayoutRef] = field(default_factory=dict)
    # id(op) of ops another op emits later in its place (emit_op writes only a comment
    # where they stand; lower/dot/direct_store.py)
    deferred_ops: set[int] = field(default_factory=set)
    # Op families' own state (`family`): its class -> the one instance.
    families: dict[type, object] = field(default_factory=dict)
    _indent: int = field(default=1, init=False)
    _names: dict[int, str] = field(default_factory=dict, init=False)  # value id -> MSL name
    _used: set[str] = field(default_factory=set, init=False)  # MSL names taken

    def family(self, kind: type[S]) -> S:
        """The state of one op family for this function: an instance of `kind`, made on
        first use."""
        state = self.families.get(kind)
        if state is None:
            state = self.families[kind] = kind()
        return cast(S, state)

    def require_msl(self, feature: str, what: str) -> None:
        """Use a version-gated MSL feature (msltrans/msl_version.py), or refuse the op."""
        _versions.require(feature, self.msl_version, what=what, location=self.where(),
                            op=self.op.name if self.op else None)
        self.msl_features.add(feature)

    # ---- names -----------------------------------------------------------------------
    def fresh(self, hint: str | None) -> str:
        base = sanitize(hint or "v")
        n = 0
        while (cand := f"{base}_{n}") in self._used:
            n += 1
        self._used.add(cand)
        return cand

    def hint(self, v: Value) -> str:
        """A readable base name: the Python variable, else the op kind ("constant")."""
        if v.name:
            return v.name
        kind = self.op.name.rsplit(".", 1)[-1] if self.op else "v"
        return "cst" if kind == "constant" else kind

    def bind(self, v: Value, name: str) -> None:
        """Make `v` refer to an existing MSL variable (params, block args, yields)."""
        self._names[v.id] = name
        self._used.add(name)

    @contextlib.contextmanager
    def relaid(self, layouts: dict[Value, LayoutRef]) -> Iterator[None]:
        """Emit ops again with these values in other layouts: inside, `layout(v)` is the
        given one and the values' names are whatever the re-emission binds; after, both are
        as before (the values keep their first names and layouts)."""
        saved = {v.id: self._names.get(v.id) for v in layouts}
        self.layout_overrides.update({v.id: ref for v, ref in layouts.items()})
        try:
            yield
        finally:
            for vid, name in saved.items():
                self.layout_overrides.pop(vid, None)
                if name is None:
                    self._names.pop(vid, None)
                else:
                    self._names[vid] = name

    def name(self, v: Value) -> str:
        if v.id not in self._names:
            self.fail(f"value %{v.id} ({v.name or 'unnamed'}) used before it is defined")
        return self._names[v.id]

    # ---- types and layouts -------------------------------------------------------------
    def where(self) -> str | None:
        return self.op.loc.short() if self.op else None

    def ctype(self, v: Value) -> str:
        if v.id in self.offset_base:
            return "int"  # a pointer held as an element offset (pointer_offsets.py)
        if v.id in self.coherent_values:
            return f"{COHERENT} {msl_types.ctype(v.type, self.where())}"
        return msl_types.ctype(v.type, self.where())

    def pointer_space(self, ptr: Value) -> str:
        """The address space (and coherence qualifier) to cast a pointer `ptr` into."""
        return f"{COHERENT} device" if ptr.id in self.coherent_values else "device"

    def is_tensor(self, v: Value) -> bool:
        return isinstance(v.type, TensorType)

    def layout(self, v: Value) -> LayoutRef:
        if not isinstance(v.type, TensorType):
            self.fail(f"value {v.name or v.id} is not a tensor")
        if v.id in self.layout_overrides:
            return self.layout_overrides[v.id]
        try:
            return self.layouts.of(v.type)
        except MetalNonRecoverableError as e:
            self.fail(e.reason, e.hint)

    def regs(self, v: Value) -> int:
        return self.layout(v).regs if self.is_tensor(v) else 1

    def at(self, v: Value, reg: str | int = REG) -> str:
        """Element access of `v` for register `reg` (scalars ignore the register)."""
        return f"{self.name(v)}[{reg}]" if self.is_tensor(v) else self.name(v)

    def address(self, ptr: Value, reg: str | int = REG) -> str:
        """The device address a pointer value holds for register `reg`."""
        base = self.offset_base.get(ptr.id)
        if not base:
            return self.at(ptr, reg)
        split = self.split_address.get(ptr.id)
        if split:
            return f"(({base} + {self.at(split[0], reg)}) + {self.at(split[1], reg)})"
        return f"({base} + {self.at(ptr, reg)})"

    # ---- emission ----------------------------------------------------------------------
    def line(self, text: str = "") -> None:
        self.lines.append("    " * self._indent + cap_unroll(text) if text else "")

    def lines_from(self, text: str) -> None:
        for ln in text.strip("\n").splitlines():
            if ln.strip():
                self.line(ln.rstrip())

    def render(self, macro: str, /, *, prelude: bool = False, **kw: object) -> None:
        """Lay out a template macro (`templates.macro_text`: "name" of ops.metal.j2, or
        "file.name" of templates/file.metal.j2) with `kw`: its lines into the body, or with
        `prelude=True` its text into the program scope (once)."""
        text = macro_text(macro, **kw)
        if prelude:
            self.prelude_once(text)
        else:
            self.lines_from(text)

    def include(self, name: str) -> None:
        """The static helper library templates/<name>.metal into the program scope (once)."""
        self.prelude_once(static_text(name))

    def prelude_once(self, text: str) -> None:
        """Program-scope text, unless the program has it already."""
        if text not in self.prelude:
            self.prelude.append(text)

    def indent(self, delta: int) -> None:
        self._indent += delta

    def declare(self, v: Value, hint: str | None = None) -> str:
        """Declare the result `v` (array for tensors) and return its name."""
        name = self.fresh(hint or self.hint(v))
        self.bind(v, name)
        if self.is_tensor(v):
            self.line(f"{self.ctype(v)} {name}[{self.regs(v)}];")
        return name

    def declare_var(self, v: Value, hint: str | None = None) -> str:
        """Declare a variable for `v` WITHOUT defining it, scalars included: the result
        slot of a region op (scf.for / scf.if results) that its yields assign into."""
        name = self.fresh(hint or self.hint(v))
        self.bind(v, name)
        suffix = f"[{self.regs(v)}]" if self.is_tensor(v) else ""
        self.line(f"{self.ctype(v)} {name}{suffix};")
        return name

    def assign(self, dst: str, dst_value: Value, src: Value) -> None:
        """dst := src (register arrays element by element; same type and layout)."""
        if self.is_tensor(dst_value) != self.is_tensor(src) or dst_value.type != src.type:
            self.fail(f"assigning {src.type} to {dst_value.type}")
        if not self.is_tensor(src):
            self.line(f"{dst} = {self.name(src)};")
            return
        self.render("element_loop", reg=REG, regs=self.regs(src),
                    body=f"{dst}[{REG}] = {self.name(src)}[{REG}];")

    def elementwise(self, op: Op, expr: Callable[..., str], result: int = 0) -> str:
        """out = expr(operand accesses...) per register; scalars in one statement.

        When the axis facts prove the result constant over runs of consecutive registers
        (a compare of a run of indices with an aligned bound, a row offset broadcast along
        the row), each run is computed once, at its first register (the compiler folds the
        repeats after unrolling), and the simulator re-checks the claim (`msl_assume_same`)."""
        out = op.results[result]
        args = [self.at(v) for v in op.operands]
        if not self.is_tensor(out):
            name = self.fresh(self.hint(out))
            self.bind(out, name)
            self.line(f"{self.ctype(out)} {name} = {expr(*args)};")
            return name
        name = self.declare(out)
        width = self.constant_run(out) if any(self.is_tensor(v) for v in op.operands) else 1
        body = f"{name}[{REG}] = {expr(*args)};"
        if width > 1:
            start = f"({REG} & {0xFFFFFFFF & ~(width - 1):#x}u)"
            first = expr(*(self.at(v, start) for v in op.operands))
            body = (f"{name}[{REG}] = {first};  // constant over runs of {width}\n    "
                    f"msl_assume_same({name}[{REG}], {expr(*args)});")
        self.render("element_loop", reg=REG, regs=self.regs(out), body=body)
        return name

    def constant_run(self, v: Value) -> int:
        """How many consecutive registers of `v` (from a multiple of that count) the axis
        facts prove equal: the run of its layout's first register bases along one dim, cut
        to the value's constancy there; 1 when nothing is proved."""
        if self.axis is None:
            return 1
        ll = self.layout(v).ll
        dim, k = run_dim(ll.reg)
        info = self.axis.info(v)
        if k == 0 or info.rank != len(ll.shape):
            return 1
        width = min(1 << k, info.constancy[dim])
        others = ll.reg[k:] + ll.lane + ll.warp
        while width > 1 and any(b[dim] % width for b in others):
            width //= 2
        return width

    def copy_registers(self, out: Value, sources: Sequence[tuple[str, int]]) -> str:
        """out[i] = sources[i] ("array", register) — register-only data movement."""
        name = self.declare(out)
        if all(src == sources[0][0] and reg == i for i, (src, reg) in enumerate(sources)):
            self.render("element_loop", reg=REG, regs=len(sources),
                        body=f"{name}[{REG}] = {sources[0][0]}[{REG}];")
        else:
            for i, (src, reg) in enumerate(sources):
                self.line(f"{name}[{i}] = {src}[{reg}];")
        return name

    def need_scratch(self, nbytes: int) -> str:
        """Threadgroup scratch shared by all conversions (they are barrier-separated)."""
        if nbytes > THREADGROUP_MEMORY_BYTES:
            self.fail(f"needs {nbytes} bytes of threadgroup memory (Metal has "
                      f"{THREADGROUP_MEMORY_BYTES // 1024} KB)",
                      "use a smaller BLOCK size")
        self.scratch_bytes = max(self.scratch_bytes, nbytes)
        self.scratch_uses += 1
        if self.tiles_live:  # below the fragment dots' pinned tiles (dot/fragment_loop.py)
            self.scratch_beside_tiles = max(self.scratch_beside_tiles, nbytes)
        return "msl_scratch"

    def analyse(self, block: Block) -> None:
        """Record uses and producers of every value (for pattern choices like fma), where
        each op stands (its block and index) and the op owning each region's terminator."""
        for index, op in enumerate(block.ops):
            self.positions[id(op)] = (block, index)
            for i, v in enumerate(op.operands):
                self.uses[v.id] = self.uses.get(v.id, 0) + 1
                self.users.setdefault(v.id, []).append((op, i))
            for v in op.results:
                self.producers[v.id] = op
            for region in op.regions:
                for inner in region.blocks:
                    if inner.ops:
                        self.owners[id(inner.ops[-1])] = op
                    self.analyse(inner)

    def single_use_producer(self, v: Value, name: str) -> Op | None:
        """The op defining `v` if it is a `name` op and `v` has exactly one use."""
        op = self.producers.get(v.id)
        if op is not None and op.name == name and self.uses.get(v.id) == 1:
            return op
        return None

    def emit_block(self, block: Block) -> None:
        """Emit every op of a block in order (control-flow lowerings call this for
        their regions, after binding the block arguments with `bind`)."""
        for op in block.ops:
            self.emit_op(op)

    def emit_op(self, op: Op) -> None:
        fn = lookup(op)
        outer, self.op = self.op, op
        try:
            for check in checks():  # e.g. fp8 is storage only (ops_fp8.guard)
                check(self, op)
            self.line(f"// {op.name}  {op.loc.short()}")
            if id(op) in self.deferred_ops:
                self.line("// emitted later, where its only consumer is lowered")
                return
            fn(self, op)
        finally:
            self.op = outer

    def fail(self, reason: str, hint: str | None = None) -> NoReturn:
        op = self.op
        raise MetalNonRecoverableError(reason, op=op.name if op else None,
                                       location=op.loc.short() if op else None, hint=hint)
