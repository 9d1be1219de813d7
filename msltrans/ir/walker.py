"""Walk a live TTGIR module through Triton's bindings into `msltrans.ir.model` dataclasses.

The bindings give structure (ops, operands, results, regions, block arguments, types, int
attributes); `msltrans.ir.text` fills in what they lack. `mod.walk` is post-order, so the
region/block tree is rebuilt from each op's parent block and each block's parent region.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from triton._C.libtriton import ir

from msltrans._triton_compat import check_triton, has_int_attr_binding
from msltrans.errors import MetalNonRecoverableError
from msltrans.ir import text as T
from msltrans.ir.constants import constant_attrs
from msltrans.ir.keyword_attrs import keyword_int_attrs
from msltrans.ir.model import (
    UNKNOWN_LOC,
    Argument,
    Block,
    Function,
    Location,
    Module,
    Op,
    Region,
    Value,
)
from msltrans.ir.types import parse_type

check_triton()  # names a missing pass or binding now, not in the middle of a compile
_INT_ATTR_BINDING = has_int_attr_binding(ir.operation)

# Enum / int attributes the printed custom syntax hides behind keywords; read via bindings
# where Triton has `get_int_attr` (3.7 on), else from the text (msltrans.ir.keyword_attrs).
_INT_ATTRS: dict[str, tuple[str, ...]] = {
    "arith.cmpi": ("predicate",),
    "arith.cmpf": ("predicate",),
    "tt.get_program_id": ("axis",),
    "tt.get_num_programs": ("axis",),
    "tt.make_range": ("start", "end"),
    "tt.expand_dims": ("axis",),
    "tt.reduce": ("axis",),
    "tt.scan": ("axis",),
    "tt.fp_to_fp": ("rounding",),
    "tt.clampf": ("propagateNan",),
    "tt.atomic_rmw": ("atomic_rmw_op", "sem", "scope"),
    "tt.atomic_cas": ("sem", "scope"),
    "tt.load": ("cache", "evict"),
    "tt.store": ("cache", "evict"),
    "arith.roundeven": (),
}
_BOOL_ATTRS: dict[str, tuple[str, ...]] = {
    "tt.scan": ("reverse",),
    "tt.load": ("isVolatile",),
}


class _Walk:
    def __init__(self, mod: Any) -> None:
        self.mod = mod
        self.ids: dict[int, int] = {}
        self.values: dict[int, Value] = {}

    def value(self, v: Any, name: str | None = None) -> Value:
        key = v.id()
        if key not in self.values:
            if name is None:
                try:
                    name = T.resolve_loc_text(str(v.get_loc()), {}).name
                except Exception:  # noqa: BLE001 - block arguments may lack a location
                    name = None
            self.ids[key] = len(self.ids)
            self.values[key] = Value(self.ids[key], parse_type(str(v.get_type())), name)
        return self.values[key]


def _op_attrs(op: Any, name: str, line: str) -> dict[str, Any]:
    attrs = T.property_dict(line)
    attrs.update(T.trailing_attr_dict(line))
    if not _INT_ATTR_BINDING:
        # No `get_int_attr` (Triton 3.6): the printed dictionaries above, plus the keywords.
        attrs.update(keyword_int_attrs(name, line))
    for key in _INT_ATTRS.get(name, ()) if _INT_ATTR_BINDING else ():
        try:
            got = op.get_int_attr(key)
        except Exception:  # noqa: BLE001 - optional attribute not set
            pass
        else:
            if got is not None:
                attrs[key] = got
    for key in _BOOL_ATTRS.get(name, ()):
        try:
            flag = op.get_bool_attr(key)
        except Exception:  # noqa: BLE001
            continue
        if flag is not None:
            attrs[key] = flag
    attrs.update(constant_attrs(name, line))
    return attrs


def read_module(mod: Any) -> Module:
    """Walk a live module (from `to_ttgir`, a Triton stage, or `read_ttgir_file`)."""
    raw_ops: list[Any] = []
    mod.walk(lambda o: raw_ops.append(o))
    text = mod.str()
    lines = T.read_op_lines(text)
    aliases = T.read_aliases(text)
    w = _Walk(mod)

    # Rebuild the tree: ops grouped by parent block in walk order; blocks by parent region.
    children: dict[int, list[Any]] = {}
    block_of: dict[int, Any] = {}
    region_blocks: dict[int, list[int]] = {}
    for o in raw_ops:
        if o.get_name() == "builtin.module":
            continue
        blk = o.get_block()
        bid = blk.id()
        if bid not in children:
            children[bid] = []
            block_of[bid] = blk
            region_blocks.setdefault(blk.get_parent().id(), []).append(bid)
        children[bid].append(o)

    # Pre-order list of ops to zip with the text lines.
    def preorder(o: Any, out: list[Any]) -> None:
        out.append(o)
        for i in range(o.get_num_regions()):
            for bid in region_blocks.get(o.get_region(i).id(), []):
                for c in children[bid]:
                    preorder(c, out)

    owned = _owned_regions(raw_ops)
    top = [o for o in raw_ops if o.get_name() != "builtin.module" and
           o.get_block().get_parent().id() not in owned]
    order: list[Any] = []
    for o in top:
        preorder(o, order)
    matched = _zip_text(order, [ln for ln in lines if ln.name != "builtin.module"])

    def build_op(o: Any) -> Op:
        line = matched.get(id(o))
        name = o.get_name()
        results = tuple(w.value(o.get_result(i)) for i in range(o.get_num_results()))
        operands = tuple(w.value(o.get_operand(i)) for i in range(o.get_num_operands()))
        regions = []
        for i in range(o.get_num_regions()):
            blocks = []
            for bid in region_blocks.get(o.get_region(i).id(), []):
                blk = block_of[bid]
                args = tuple(w.value(blk.get_argument(j)) for j in range(blk.get_num_arguments()))
                blocks.append(Block(args, tuple(build_op(c) for c in children[bid])))
            regions.append(Region(tuple(blocks)))
        loc = line.loc if line else UNKNOWN_LOC
        body = line.text if line else name
        return Op(name, operands, results, _op_attrs(o, name, body), tuple(regions), loc, body)

    functions = []
    for o in top:
        if o.get_name() != "tt.func":
            continue
        fop = build_op(o)
        functions.append(_function(fop, aliases))
    return Module(
        functions=tuple(functions),
        num_warps=_module_int(mod, "ttg.num-warps", 4),
        threads_per_warp=_module_int(mod, "ttg.threads-per-warp", 32),
        num_ctas=_module_int(mod, "ttg.num-ctas", 1),
        target=_module_target(text),
        text=mod.str_nodebug(),
    )


def _owned_regions(raw_ops: list[Any]) -> set[int]:
    owned = set()
    for o in raw_ops:
        if o.get_name() == "builtin.module":
            continue
        for i in range(o.get_num_regions()):
            owned.add(o.get_region(i).id())
    return owned


def _zip_text(order: list[Any], lines: list[T.OpText]) -> dict[int, T.OpText]:
    """Match pre-order ops to printed lines; the printer elides some empty terminators."""
    out: dict[int, T.OpText] = {}
    j = 0
    for o in order:
        name = o.get_name()
        implicit = o.get_num_operands() == 0 and name.endswith(("yield", "return", "condition"))
        # An elided `scf.yield` may be followed by the enclosing op's printed one (operands).
        if j < len(lines) and lines[j].name == name and not (implicit and "%" in lines[j].text):
            out[id(o)] = lines[j]
            j += 1
        elif implicit:
            continue  # an implicit terminator the printer left out
        else:
            got = lines[j].name if j < len(lines) else "<end>"
            raise MetalNonRecoverableError(
                f"module text out of step with the bindings (op {name}, text {got})",
                op=name, hint="report this module; the walker's text reader needs a fix")
    return out


def _function(fop: Op, aliases: dict[str, str]) -> Function:
    header = fop.text
    sym = T.symbol_ref(header)
    if sym is None:
        raise MetalNonRecoverableError("tt.func without a symbol name", op="tt.func",
                                       location=fop.loc.short())
    name = sym[0]
    public = " private " not in f" {header} "
    block = fop.regions[0].blocks[0]
    arg_texts = T.func_arg_texts(header)
    args = []
    for i, v in enumerate(block.args):
        atext = arg_texts[i] if i < len(arg_texts) else ""
        pyname = T.arg_name(atext, aliases) or v.name or f"arg{i}"
        value = Value(v.id, v.type, pyname)
        args.append(Argument(value, pyname, T.arg_attrs(atext)))
    return Function(name, tuple(args), fop.regions[0], public, fop.loc)


def _module_int(mod: Any, key: str, default: int) -> int:
    try:
        return int(mod.get_int_attr(key))
    except Exception:  # noqa: BLE001
        return default


def _module_target(text: str) -> str | None:
    import re

    m = re.search(r'ttg\.target = "([^"]+)"', text)
    return m.group(1) if m else None


def read_ttgir_file(path: str | Path) -> Module:
    """Parse a saved .ttgir with Triton's own parser, then walk it."""
    ctx = ir.context()
    ir.load_dialects(ctx)
    mod = ir.parse_mlir_module(str(path), ctx)
    mod.context = ctx  # keep the context alive as long as the module
    return read_module(mod)


def location_of(loc: Location) -> str:
    return loc.short()
