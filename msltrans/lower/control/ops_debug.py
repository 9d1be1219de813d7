"""tt.print (tl.device_print / print) and tt.assert (tl.device_assert, debug builds).

Both write records into one hidden `device uint* msl_dbg` buffer, appended after the kernel's
own buffers (`MslProgram.debug_buffer_index`); the launcher decodes it after the dispatch
(msltrans/abi/debug_layout.py has the layout, msltrans/runtime/debug_buffer.py the host side).

As in Triton's NVIDIA lowering, every thread prints the registers it holds: a scalar prints
once per thread, a tensor element once per thread holding it (replicated layouts print
duplicates, as on NVIDIA). An assert records each failing element once (its owner thread; a
scalar by thread 0) and the kernel goes on: Metal has no abort.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from msltrans.abi import debug_layout as fmt
from msltrans.ir.model import Op, Value
from msltrans.ir.types import FLOAT_WIDTHS, INT_WIDTHS, PointerType, ScalarType, TensorType
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowers

BUFFER = "msl_dbg"
SEQ = "msl_dbg_seq"
NO_RECORD_SPACE = 0xFFFFFFFF

# MSL storage → the 64 bits a record keeps (raw bit pattern, zero-extended).
_BITS = {
    "bool": "ulong({x} ? 1u : 0u)", "char": "ulong(uchar({x}))", "short": "ulong(ushort({x}))",
    "int": "ulong(uint({x}))", "long": "as_type<ulong>({x})",
    "half": "ulong(as_type<ushort>({x}))", "bfloat": "ulong(as_type<ushort>({x}))",
    "float": "ulong(as_type<uint>({x}))",
}
_STORAGE = {"bool": "i1", "char": "i8", "short": "i16", "int": "i32", "long": "i64",
            "half": "f16", "bfloat": "bf16", "float": "f32"}


@dataclass
class DebugState:
    """Per kernel: the site table that travels in the kernel metadata. `function` is the
    kernel's name, set by `begin`; a noinline helper's emitter has none (ops_call.py)."""

    function: str | None = None
    sites: list[dict[str, Any]] = field(default_factory=list)

    def add(self, site: dict[str, Any]) -> int:
        self.sites.append(site)
        return len(self.sites) - 1


def _state(em: Emitter) -> DebugState:
    state = em.family(DebugState)
    if state.function is None:
        em.fail("device_print / device_assert inside a noinline function",
                "call it in the kernel itself, or drop noinline=True from the helper")
    if not state.sites:
        em.render("debug.debug_helpers", prelude=True, header_words=fmt.HEADER_WORDS,
                  record_words=fmt.RECORD_WORDS, dropped_word=fmt.DROPPED,
                  capacity_word=fmt.CAPACITY)
    return state


_ESCAPE = re.compile(rb"\\([0-9A-Fa-f]{2}|\\)")


def mlir_string(em: Emitter, text: str, after: str) -> str:
    """The first MLIR string literal after `after` in an op's printed text (MLIR escapes
    `"`, `\\` and non-printable bytes as `\\XX`)."""
    start = text.find('"', text.find(after) + len(after))
    if start < 0:
        em.fail("no string attribute in the op's text")
    raw = bytearray()
    i = start + 1
    data = text.encode("utf-8")
    while i < len(data) and data[i:i + 1] != b'"':
        m = _ESCAPE.match(data, i)
        if m:
            tok = m.group(1)
            raw += b"\\" if tok == b"\\" else bytes([int(tok, 16)])
            i = m.end()
        else:
            raw += data[i:i + 1]
            i += 1
    if i >= len(data):
        em.fail("unterminated string attribute in the op's text")
    return raw.decode("utf-8", errors="replace")


def _element(em: Emitter, v: Value) -> ScalarType | PointerType:
    t = v.type
    return t.element if isinstance(t, TensorType) else t  # type: ignore[return-value]


def _storage(em: Emitter, v: Value) -> str:
    elem = _element(em, v)
    if isinstance(elem, PointerType):
        return "ptr"
    if not isinstance(elem, ScalarType) or (elem.name not in INT_WIDTHS
                                            and elem.name not in FLOAT_WIDTHS):
        em.fail(f"printing values of type {elem}",
                "device_print takes integer, float (f16/bf16/f32/f64) and pointer values; "
                "convert other types (e.g. fp8) with .to(tl.float32) first")
    if elem.name == "f64":
        return "f32"  # f64 is computed as f32 on Metal (msl_types warns); print that value
    return _STORAGE[em.ctype(v)]


def _bits(em: Emitter, v: Value, access: str) -> str:
    if isinstance(_element(em, v), PointerType):
        return f"(ulong)({access})"
    return _BITS[em.ctype(v)].format(x=access)


def _index(em: Emitter, v: Value) -> str:
    if not em.is_tensor(v):
        return "-1"
    return f"{em.layout(v).flat_fn}(msl_r, msl_lane, msl_warp)"


@lowers("tt.print")
def print_(em: Emitter, op: Op) -> None:
    state = _state(em)
    prefix = mlir_string(em, op.text, "tt.print")
    hexa = bool(op.attrs.get("hex", False))
    signed = tuple(op.attrs.get("isSigned", ()))
    if len(signed) != len(op.operands):
        em.fail(f"isSigned has {len(signed)} entries for {len(op.operands)} operands")
    writes: list[dict[str, Any]] = []
    offset = 0
    if not op.operands:
        site = state.add({"kind": "print", "prefix": prefix, "operands": 0})
        writes.append({"offset": 0, "site": site, "regs": None, "index": "-1", "bits": "0ul"})
        offset = 1
    for i, v in enumerate(op.operands):
        shape = list(v.type.shape) if isinstance(v.type, TensorType) else []
        site = state.add({
            "kind": "print", "prefix": prefix, "operands": len(op.operands), "operand": i,
            "hex": hexa, "signed": bool(signed[i]), "storage": _storage(em, v), "shape": shape,
        })
        regs = em.regs(v) if em.is_tensor(v) else None
        writes.append({"offset": offset, "site": site, "regs": regs, "index": _index(em, v),
                       "bits": _bits(em, v, em.at(v))})
        offset += regs or 1
    em.render("debug.debug_print", total=offset, writes=writes)


@lowers("tt.assert")
def assert_(em: Emitter, op: Op) -> None:
    state = _state(em)
    if len(op.operands) != 1:
        em.fail(f"tt.assert with {len(op.operands)} operands")
    cond = op.operands[0]
    elem = _element(em, cond)
    if not isinstance(elem, ScalarType) or (elem.name not in INT_WIDTHS
                                            and elem.name not in FLOAT_WIDTHS):
        em.fail(f"assert condition of type {elem}", "use a boolean condition")
    loc = op.loc
    shape = list(cond.type.shape) if isinstance(cond.type, TensorType) else []
    site = state.add({
        "kind": "assert", "message": mlir_string(em, op.text, "tt.assert"),
        "file": loc.file or "unknown", "line": int(loc.line or 0), "function": state.function,
        "shape": shape,
    })
    fails = f"!bool({em.at(cond)})"
    regs = None
    if em.is_tensor(cond):
        regs = em.regs(cond)
        fails = f"{fails} && {em.layout(cond).owns_fn}(msl_r, msl_lane, msl_warp)"
    em.render("debug.debug_assert", site=site, regs=regs, fails=fails, index=_index(em, cond),
              failed_word=fmt.FAILED)


def begin(em: Emitter, function: str) -> None:
    """Called by lower_module before the body: lowerings here find their state on `em`."""
    em.family(DebugState).function = function


def finish(em: Emitter) -> tuple[dict[str, Any], ...]:
    """After the body: the site table (empty when the kernel neither prints nor asserts);
    when not empty, the body gets its per-thread call counter."""
    state = em.family(DebugState)
    if not state.sites:
        return ()
    em.lines.insert(0, f"    uint {SEQ} = 0u;  // print/assert calls so far (orders records)")
    return tuple(state.sites)


def buffer_decl() -> str:
    return f"device uint* {BUFFER}"
