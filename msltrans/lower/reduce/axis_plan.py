"""How one tensor axis is spread over (register, lane, warp): the plan reduce and scan share.

Reductions and scans along an axis work bit by bit of the axis coordinate: a bit held by a
register is combined inside the thread, a lane bit by a SIMD shuffle, a warp bit through
threadgroup scratch. That needs each basis of the linear layout to be either purely along
the axis (a power of two there: exactly one coordinate bit) or purely off it; every layout
Triton's passes produce (#blocked and its slices) is. Anything else is refused here, once.
"""

from __future__ import annotations

from dataclasses import dataclass

from msltrans.layout import LinearLayout

KINDS = ("reg", "lane", "warp")


@dataclass(frozen=True)
class AxisBit:
    kind: str  # "reg" | "lane" | "warp"
    bit: int  # bit of the register id / lane id / warp id


@dataclass(frozen=True)
class AxisPlan:
    ll: LinearLayout
    axis: int
    bits: tuple[AxisBit, ...]  # bits[j] holds bit j of the axis coordinate (LSB first)
    other_regs: tuple[int, ...]  # register bits off the axis (zero bases included)

    def axis_bits(self, kind: str) -> list[int]:
        """The `kind` bits along the axis, least significant (axis-wise) first."""
        return [b.bit for b in self.bits if b.kind == kind]

    def mask(self, kind: str, bits: list[int] | None = None) -> int:
        m = 0
        for b in self.axis_bits(kind) if bits is None else bits:
            m |= 1 << b
        return m

    @property
    def width(self) -> dict[str, int]:
        return {"reg": len(self.ll.reg), "lane": len(self.ll.lane), "warp": len(self.ll.warp)}

    def register(self, other: int, along: int, along_bits: list[int]) -> int:
        """Register id from an index over `other_regs` and one over `along_bits`."""
        r = spread(other, list(self.other_regs))
        return r | spread(along, along_bits)


def spread(value: int, bits: list[int]) -> int:
    """Bit i of `value` moved to position bits[i] (the inverse of pext)."""
    out = 0
    for i, b in enumerate(bits):
        if value >> i & 1:
            out |= 1 << b
    return out


def pext_expr(var: str, bits: list[int]) -> str:
    """MSL for the bits of `var` at positions `bits`, packed LSB first (0 if none)."""
    if not bits:
        return "0u"
    terms = [f"(({var} >> {b}u) & 1u) << {i}u" if i else f"(({var} >> {b}u) & 1u)"
             for i, b in enumerate(bits)]
    return "(" + " | ".join(terms) + ")"


def plan_axis(ll: LinearLayout, axis: int) -> AxisPlan | str:
    """The plan, or the reason this layout cannot be reduced/scanned along `axis`."""
    n = ll.shape[axis]
    by_pos: dict[int, AxisBit] = {}
    other_regs = []
    for kind, bases in zip(KINDS, (ll.reg, ll.lane, ll.warp), strict=True):
        for bit, basis in enumerate(bases):
            a = basis[axis]
            off = any(c for d, c in enumerate(basis) if d != axis)
            if a == 0:
                if kind == "reg":
                    other_regs.append(bit)
                continue
            if off:
                return f"a {kind} basis {basis} mixes the axis with other dimensions"
            if a & (a - 1):
                return f"a {kind} basis {basis} is not a single bit of axis {axis}"
            pos = a.bit_length() - 1
            if pos in by_pos:
                return f"axis {axis} bit {pos} is held twice (replicated along the axis)"
            by_pos[pos] = AxisBit(kind, bit)
    if sorted(by_pos) != list(range(n.bit_length() - 1)):
        return f"the layout does not cover axis {axis} of shape {ll.shape}"
    return AxisPlan(ll, axis, tuple(by_pos[p] for p in sorted(by_pos)), tuple(other_regs))


def thread_bits(plan: AxisPlan, skip_lane: int, skip_warp: int) -> tuple[list[int], list[int]]:
    """Lane and warp bits not in the skip masks (they index a thread's scratch slot)."""
    lanes = [b for b in range(plan.width["lane"]) if not skip_lane >> b & 1]
    warps = [b for b in range(plan.width["warp"]) if not skip_warp >> b & 1]
    return lanes, warps
