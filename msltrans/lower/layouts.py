"""The layouts one kernel uses, numbered L0, L1, ... with their MSL helper functions.

Helpers compute, for register r of lane/warp, a coordinate along one dim, the row-major flat
index and whether this (r, lane, warp) owns the element (replicas do not store).
"""

from __future__ import annotations

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
        dims = [self.terms(lambda b, d=d: b[d]) for d in range(len(self.ll.shape))]
        free = self.ll.free_masks()
        return {
            "name": self.name, "encoding": self.encoding,
            "shape": "x".join(map(str, self.ll.shape)), "regs": self.regs,
            "dims": dims, "flat": self.terms(self.ll.flat),
            "free": [(var, mask) for (var, _), mask in zip(_KINDS, free, strict=True) if mask],
        }


class LayoutTable:
    def __init__(self) -> None:
        self._refs: dict[tuple[str, tuple[int, ...]], LayoutRef] = {}

    def of(self, t: TensorType) -> LayoutRef:
        key = (t.encoding or "", t.shape)
        if key not in self._refs:
            ll = decode_layout(t.encoding, t.shape)
            self._refs[key] = LayoutRef(f"L{len(self._refs)}", ll, t.encoding or "")
        return self._refs[key]

    def all(self) -> list[LayoutRef]:
        return list(self._refs.values())
