"""The layouts one kernel uses, numbered L0, L1, ... with their MSL helper functions.

Helpers compute, for register r of lane/warp, a coordinate along one dim, the row-major flat
index and whether this (r, lane, warp) owns the element (replicas do not store).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from msltrans.ir.types import TensorType
from msltrans.layout import LinearLayout, decode_layout

_KINDS = (("r", 0), ("lane", 1), ("warp", 2))


@dataclass(frozen=True)
class XorTerm:
    var: str  # "r" | "lane" | "warp"
    mask: int  # 1 << bit
    value: int  # what this bit XORs in


@dataclass(frozen=True)
class LayoutRef:
    name: str  # "L0"
    ll: LinearLayout
    encoding: str

    @property
    def regs(self) -> int:
        return self.ll.num_regs

    def coord_fn(self, dim: int) -> str:
        return f"{self.name}_d{dim}"

    @property
    def flat_fn(self) -> str:
        return f"{self.name}_flat"

    @property
    def owns_fn(self) -> str:
        return f"{self.name}_owns"

    @property
    def owns_all(self) -> bool:
        """No replicas: every (register, lane, warp) owns its element."""
        return not any(self.ll.free_masks())

    def terms(self, value_of) -> list[XorTerm]:  # noqa: ANN001 - basis → int
        out = []
        for var, kind in _KINDS:
            bases = (self.ll.reg, self.ll.lane, self.ll.warp)[kind]
            for bit, basis in enumerate(bases):
                v = value_of(basis)
                if v:
                    out.append(XorTerm(var, 1 << bit, v))
        return out

    def helper_data(self) -> dict:
        """Everything the `layout_helpers` macro prints (computed here, not in Jinja)."""
        dims = [self.split(lambda b, d=d: b[d]) for d in range(len(self.ll.shape))]
        free = self.ll.free_masks()
        return {
            "name": self.name, "encoding": self.encoding,
            "shape": "x".join(map(str, self.ll.shape)), "regs": self.regs,
            "dims": dims, "flat": self.split(self.ll.flat),
            "free": [(var, mask) for (var, _), mask in zip(_KINDS, free, strict=True) if mask],
        }

    def split(self, value_of) -> dict:  # noqa: ANN001 - basis → int
        """A coordinate as (register part) join (thread part): the register terms fold to a
        constant in an unrolled element loop; the thread part is one expression of lane and
        warp, the same for every register (computed once). `join` is "+" when the two parts
        never share a bit (then the compiler can fold the constant into an address
        offset), else "^"."""
        terms = self.terms(value_of)
        reg = [t for t in terms if t.var == "r"]
        thread = [t for t in terms if t.var != "r"]
        reg_bits = thread_bits = 0
        for t in reg:
            reg_bits |= t.value
        for t in thread:
            thread_bits |= t.value
        return {"reg": reg, "thread": thread_expr(thread),
                "join": "+" if reg_bits & thread_bits == 0 else "^"}


def thread_expr(terms: list[XorTerm]) -> str:
    """MSL int expression of XOR_{bit set} value over lane/warp bits: bit fields shifted into
    place when every term adds its own power of two (every #blocked layout), else a XOR of
    selects."""
    if not terms:
        return "0"
    values = [t.value for t in terms]
    disjoint = all(v > 0 and v & (v - 1) == 0 for v in values) and \
        len(set(values)) == len(values)
    if not disjoint:
        return "(" + " ^ ".join(f"(({t.var} & {t.mask}u) != 0u ? {t.value} : 0)"
                                for t in terms) + ")"
    fields = []
    for var in ("lane", "warp"):
        mine = sorted((t for t in terms if t.var == var), key=lambda t: t.mask)
        i = 0
        while i < len(mine):
            j = i
            while (j + 1 < len(mine) and mine[j + 1].mask == mine[j].mask << 1
                   and mine[j + 1].value == mine[j].value << 1):
                j += 1
            low = mine[i].mask.bit_length() - 1  # first bit of the field
            shift = mine[i].value.bit_length() - 1  # where it lands
            mask = ((1 << (j - i + 1)) - 1) << low
            if shift >= low:
                f = f"(({var} & {mask}u) << {shift - low}u)" if shift > low else \
                    f"({var} & {mask}u)"
            else:
                f = f"(({var} & {mask}u) >> {low - shift}u)"
            fields.append(f)
            i = j + 1
    return "int(" + " | ".join(fields) + ")"


_SLICE_RE = re.compile(r"^#ttg\.slice<\{dim = (\d+), parent = (.*)\}>$", re.S)


class LayoutTable:
    def __init__(self) -> None:
        self._refs: dict[tuple[str, tuple[int, ...]], LayoutRef] = {}
        # Encoding text -> the encoding the kernel uses instead, as a value's own encoding
        # or a slice's parent (never inside a #dot_op): dot results kept in simdgroup
        # fragments (msltrans/lower/dot/fragments.py). Set before any layout is decoded.
        self.rewrites: dict[str, str] = {}

    def encoding(self, enc: str | None) -> str | None:
        """`enc` as this kernel lays it out (after `rewrites`)."""
        if enc is None or not self.rewrites:
            return enc
        if enc in self.rewrites:
            return self.rewrites[enc]
        m = _SLICE_RE.match(enc)
        if m:
            parent = self.encoding(m.group(2))
            if parent != m.group(2):
                return f"#ttg.slice<{{dim = {m.group(1)}, parent = {parent}}}>"
        return enc

    def of(self, t: TensorType) -> LayoutRef:
        enc = self.encoding(t.encoding)
        key = (enc or "", t.shape)
        if key not in self._refs:
            ll = decode_layout(enc, t.shape)
            self._refs[key] = LayoutRef(f"L{len(self._refs)}", ll, enc or "")
        return self._refs[key]

    def all(self) -> list[LayoutRef]:
        return list(self._refs.values())


def run_dim(bases: tuple[tuple[int, ...], ...]) -> tuple[int, int]:
    """(dim, k): the first k register bases are 1, 2, ..., 2^(k-1) along `dim`."""
    if not bases:
        return 0, 0
    first = bases[0]
    nonzero = [d for d, x in enumerate(first) if x]
    if len(nonzero) != 1 or first[nonzero[0]] != 1:
        return 0, 0
    dim, k = nonzero[0], 0
    for i, b in enumerate(bases):
        if any(x for d, x in enumerate(b) if d != dim) or b[dim] != 1 << i:
            break
        k += 1
    return dim, k
