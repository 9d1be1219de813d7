"""The ONE place Triton layouts are decoded: encoding text → linear layout.

A linear layout maps the bits of (register, lane, warp) to tensor coordinates by XOR of
basis vectors (Triton's LinearLayout, restricted to one CTA): coordinate =
XOR_{i: bit i of r set} reg[i] ^ XOR_{lane bits} lane[j] ^ XOR_{warp bits} warp[k].
A zero (or linearly dependent) basis means replication: several (r, lane, warp) hold the
same element. `free_masks` picks one owner deterministically for stores and scratch writes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from msltrans.errors import MetalNonRecoverableError
from msltrans.ir.text import parse_attr_dict

Basis = tuple[int, ...]


@dataclass(frozen=True)
class LinearLayout:
    shape: tuple[int, ...]
    reg: tuple[Basis, ...]
    lane: tuple[Basis, ...]
    warp: tuple[Basis, ...]

    @property
    def num_regs(self) -> int:
        return 1 << len(self.reg)

    @property
    def num_lanes(self) -> int:
        return 1 << len(self.lane)

    @property
    def num_warps(self) -> int:
        return 1 << len(self.warp)

    def coord(self, r: int, lane: int, warp: int) -> tuple[int, ...]:
        c = [0] * len(self.shape)
        for bases, idx in ((self.reg, r), (self.lane, lane), (self.warp, warp)):
            for bit, basis in enumerate(bases):
                if idx >> bit & 1:
                    c = [a ^ b for a, b in zip(c, basis, strict=True)]
        return tuple(c)

    def flat(self, coord: tuple[int, ...]) -> int:
        """Row-major linear index (the order Triton's tensors and our scratch use)."""
        idx = 0
        for c, n in zip(coord, self.shape, strict=True):
            idx = idx * n + c
        return idx

    def free_masks(self) -> tuple[int, int, int]:
        """Bits of (reg, lane, warp) whose basis adds no new element: replicas.

        An element is owned by the one (r, lane, warp) whose free bits are all zero;
        scanning registers first keeps a thread's own copies ahead of other threads'.
        """
        pivots: dict[int, int] = {}  # GF(2) elimination on row-major flat indices
        masks = []
        for bases in (self.reg, self.lane, self.warp):
            mask = 0
            for bit, basis in enumerate(bases):
                v = self.flat(basis)
                while v:
                    top = v.bit_length() - 1
                    if top not in pivots:
                        pivots[top] = v
                        break
                    v ^= pivots[top]
                if v == 0:
                    mask |= 1 << bit
            masks.append(mask)
        return masks[0], masks[1], masks[2]

    def locate(self, coord: tuple[int, ...]) -> tuple[int, int, int]:
        """The inverse: the owning (register, lane, warp) of an element — the one whose
        replica bits (`free_masks`) are zero. Raises ValueError if no thread holds it."""
        target = self.flat(coord)
        rows: dict[int, tuple[int, int]] = {}  # pivot bit → (flat value, combination mask)
        all_bases = list(self.reg) + list(self.lane) + list(self.warp)
        free = self.free_masks()
        skip = free[0] | free[1] << len(self.reg) | free[2] << (len(self.reg) + len(self.lane))
        for i, basis in enumerate(all_bases):
            if skip >> i & 1:
                continue
            v, combo = self.flat(basis), 1 << i
            while v:
                top = v.bit_length() - 1
                if top not in rows:
                    rows[top] = (v, combo)
                    break
                v, combo = v ^ rows[top][0], combo ^ rows[top][1]
        combo = 0
        while target:
            top = target.bit_length() - 1
            if top not in rows:
                raise ValueError(f"element {coord} is not held by any thread")
            target, combo = target ^ rows[top][0], combo ^ rows[top][1]
        n_reg, n_lane = len(self.reg), len(self.lane)
        return (combo & ((1 << n_reg) - 1), combo >> n_reg & ((1 << n_lane) - 1),
                combo >> (n_reg + n_lane))

    def dim_bases(self, dim: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """Per input kind, the component of every basis along tensor dim `dim`."""
        return (tuple(b[dim] for b in self.reg), tuple(b[dim] for b in self.lane),
                tuple(b[dim] for b in self.warp))


def _log2(n: int, what: str) -> int:
    if n <= 0 or n & (n - 1):
        raise MetalNonRecoverableError(f"{what} = {n} is not a power of two",
                                       hint="Triton tensor shapes and layouts are powers of 2")
    return int(math.log2(n))


def _identity(sizes: list[int], order: list[int], rank: int,
              below: list[int] | None = None) -> list[Basis]:
    """Bases of an identity layout over `sizes`, minor-most dim (order[0]) first, placed
    above the `below` extent per dim (lanes sit above a thread's registers, and so on)."""
    out: list[Basis] = []
    for d in order:
        for i in range(_log2(sizes[d], "layout size")):
            b = [0] * rank
            b[d] = (below[d] if below else 1) << i
            out.append(tuple(b))
    return out


def _fit_to_shape(shape: tuple[int, ...], reg: list[Basis], lane: list[Basis],
                  warp: list[Basis], order: list[int]) -> LinearLayout:
    """Triton's combineCtaCgaWithShape for one CTA: broadcast what overhangs the shape,
    repeat in registers what the tile does not cover."""
    rank = len(shape)

    def clip(bases: list[Basis]) -> list[Basis]:
        return [tuple(0 if c >= shape[d] else c for d, c in enumerate(b)) for b in bases]

    # Registers that overhang are dropped (no point holding copies); lanes and warps
    # cannot be dropped, so they broadcast (replicate).
    reg = [b for b in clip(reg) if any(b)]
    lane, warp = clip(lane), clip(warp)
    for d in order:
        covered = 1
        for b in reg + lane + warp:
            if b[d]:
                covered = max(covered, b[d] * 2)
        while covered < shape[d]:
            extra = [0] * rank
            extra[d] = covered
            reg.append(tuple(extra))
            covered *= 2
    return LinearLayout(tuple(shape), tuple(reg), tuple(lane), tuple(warp))


def _blocked(attrs: dict, shape: tuple[int, ...]) -> LinearLayout:
    rank = len(shape)
    order = list(attrs["order"])
    spt, tpw, wpc = (list(attrs[k]) for k in ("sizePerThread", "threadsPerWarp", "warpsPerCTA"))
    if not (len(order) == len(spt) == len(tpw) == len(wpc) == rank):
        raise MetalNonRecoverableError(f"blocked layout of rank {len(order)} on shape {shape}")
    return _fit_to_shape(shape, *_cta_tile(spt, tpw, wpc, order), order)


def _cta_tile(spt: list[int], tpw: list[int], wpc: list[int],
              order: list[int]) -> tuple[list[Basis], list[Basis], list[Basis]]:
    rank = len(order)
    per_warp = [s * t for s, t in zip(spt, tpw, strict=True)]
    return (_identity(spt, order, rank), _identity(tpw, order, rank, spt),
            _identity(wpc, order, rank, per_warp))


def _slice(attrs: dict, shape: tuple[int, ...]) -> LinearLayout:
    dim = int(attrs["dim"])
    parent_shape = shape[:dim] + (1,) + shape[dim:]
    parent = decode_layout(str(attrs["parent"]), parent_shape)

    def drop(bases: tuple[Basis, ...]) -> tuple[Basis, ...]:
        return tuple(b[:dim] + b[dim + 1:] for b in bases)

    return LinearLayout(shape, drop(parent.reg), drop(parent.lane), drop(parent.warp))


def _dot_operand_fma(attrs: dict, shape: tuple[int, ...]) -> LinearLayout:
    """#dot_op with a #blocked parent (the FMA path): the parent's layout along the
    non-K dims, the whole K extent in each thread's registers, lanes/warps broadcast on K."""
    op_idx = int(attrs["opIdx"])
    parent_text = str(attrs["parent"])
    if not parent_text.startswith("#ttg.blocked"):
        raise MetalNonRecoverableError(f"dot operand with parent {parent_text[:40]}",
                                       hint="only #blocked parents (FMA dot) are supported")
    p = _parse_params(parent_text)
    rank = len(shape)
    k_dim = rank - 1 if op_idx == 0 else rank - 2
    order = list(p["order"])
    spt, tpw, wpc = (list(p[k]) for k in ("sizePerThread", "threadsPerWarp", "warpsPerCTA"))
    spt[k_dim] = shape[k_dim]

    def broadcast_k(bases: list[Basis]) -> list[Basis]:
        return [tuple(0 if d == k_dim else c for d, c in enumerate(b)) for b in bases]

    reg, lane, warp = _cta_tile(spt, tpw, wpc, order)
    return _fit_to_shape(shape, reg, broadcast_k(lane), broadcast_k(warp), order)


def _linear(attrs: dict, shape: tuple[int, ...]) -> LinearLayout:
    if attrs.get("block"):
        raise MetalNonRecoverableError("linear layout with CTA (block) bases",
                                       hint="one program is one threadgroup; num_ctas must be 1")

    def bases(key: str) -> list[Basis]:
        return [tuple(b) for b in attrs.get(key, ())]

    # Triton's LinearEncodingAttr::toLinearLayout fits the encoding to the tensor's shape: a
    # #linear made for a larger shape (e.g. kept on the size-1 dim of an expand_dims before
    # a broadcast) broadcasts what overhangs the shape, and repeats in registers what it
    # does not cover.
    return _fit_to_shape(shape, bases("register"), bases("lane"), bases("warp"),
                         list(reversed(range(len(shape)))))


_KINDS = {"blocked": _blocked, "slice": _slice, "dot_op": _dot_operand_fma, "linear": _linear}
_ENC_RE = re.compile(r"^#ttg\.(\w+)<\{(.*)\}>$", re.S)


def _parse_params(text: str) -> dict:
    m = _ENC_RE.match(text.strip())
    if not m:
        raise MetalNonRecoverableError(f"layout {text[:60]!r} is not a distributed encoding",
                                       hint="only #blocked, #slice, #dot_op<#blocked>, #linear")
    return parse_attr_dict(m.group(2))


def decode_layout(encoding: str | None, shape: tuple[int, ...]) -> LinearLayout:
    """Linear layout of a tensor with this encoding and shape (one CTA)."""
    if encoding is None:
        raise MetalNonRecoverableError("tensor without a layout encoding (TTIR, not TTGIR)")
    m = _ENC_RE.match(encoding.strip())
    if not m or m.group(1) not in _KINDS:
        kind = m.group(1) if m else encoding[:40]
        raise MetalNonRecoverableError(f"layout #{kind} is not supported",
                                       hint="only #blocked, #slice, #dot_op<#blocked>, #linear")
    attrs = parse_attr_dict(m.group(2))
    if "CGALayout" in attrs or "CTAsPerCGA" in attrs:
        ctas = attrs.get("CTAsPerCGA")
        if ctas and any(c != 1 for c in ctas):
            raise MetalNonRecoverableError("layout spans several CTAs",
                                           hint="num_ctas must be 1 on Metal")
    return _KINDS[m.group(1)](attrs, tuple(shape))


def gather_registers(
    dst: LinearLayout,
    srcs: list[LinearLayout],
    to_src: Callable[[tuple[int, ...]], tuple[int, tuple[int, ...]]],
    offset: tuple[int, ...] | None = None,
) -> list[tuple[int, int]] | None:
    """For data movement that stays inside each thread: (operand, src register) for every
    dst register, or None when the layouts would need a cross-thread conversion.

    `to_src` maps a dst coordinate to (operand, src coordinate) and must be XOR-linear
    (broadcast, expand_dims, trans, reshape, join all are, for power-of-two shapes);
    `offset` is XORed into the src coordinate (split picks the half this way).
    """
    def moved(c: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
        k, s = to_src(c)
        return k, tuple(a ^ b for a, b in zip(s, offset, strict=True)) if offset else s

    for dst_bases, kind in ((dst.lane, "lane"), (dst.warp, "warp")):
        for i, basis in enumerate(dst_bases):
            k, s = to_src(basis)
            if k != 0 or any(tuple(getattr(src, kind)[i]) != s for src in srcs):
                return None
    tables = []
    for src in srcs:
        table: dict[tuple[int, ...], int] = {}
        for r in range(src.num_regs):
            table.setdefault(src.coord(r, 0, 0), r)
        tables.append(table)
    out = []
    for r in range(dst.num_regs):
        k, s = moved(dst.coord(r, 0, 0))
        if s not in tables[k]:
            return None
        out.append((k, tables[k][s]))
    return out
