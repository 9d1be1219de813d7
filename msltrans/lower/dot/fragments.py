"""Dot results that stay in simdgroup-matrix fragments: the layout, and which dots get it.

The fragment layout F(M, N, W) of an M x N dot result on W simdgroups is the register layout
in which each thread's registers ARE the `thread_elements()` of the 8x8 simdgroup matrices
its simdgroup multiplies into, so C goes into the MMA and D comes out of it without touching
threadgroup memory:

- inside one 8x8 tile, Apple's lane ownership (SPEED.md; the simulator's matrix.h): lane bits
  b1, b2, b4 give the row (1, 2, 4), bits b0, b3 the column (2, 4), the element index of the
  lane's pair the column's low bit;
- registers: the pair element first, then the column tiles (8, 16, ...), then the row tiles
  of the simdgroup's block; register 2·(j + TN·i) + e holds element e of tile (i, j);
- simdgroup w owns rows [w·M/W, (w+1)·M/W): every row of the result lives in ONE
  simdgroup, in four lanes (bits 0 and 3) of it, so a row reduction (`tl.max(s, 1)`) is an
  in-thread fold and two shuffles, and a row vector broadcast back (`alpha[:, None]`) is in
  the same threads already.

It is written as a Triton `#ttg.linear` encoding, which every lowering already handles
(msltrans/layout.py fits it to any shape: a [M, 1] expand_dims or [M] slice of it is the
same row ownership with the column bits replicated).

`plan_encodings` decides, for a whole kernel, which #blocked result encodings of tt.dot
become fragment layouts: the encoding text is replaced by F's wherever it appears as a
value's encoding or a slice's parent (LayoutTable.rewrites), never inside a #dot_op. Every
op that meets such a value lowers it through the generic layout machinery, so a kernel is
correct whatever ops follow the dot; the dots themselves then take the fragment path
(fragment_mma.py). An encoding is left alone when a dot producing it cannot take that path
(shape, types, too many tiles per simdgroup, rows not a multiple of 8·W), when its dots
disagree on M, or when the dot is a matmul K loop's resident accumulator (resident.py:
there the matrices already stay in registers across the loop, in a 2-D simdgroup grid
that reuses each staged fragment more).
"""

from __future__ import annotations

from collections.abc import Iterator

from msltrans.abi.limits import THREADGROUP_MEMORY_BYTES
from msltrans.ir.model import Module, Op
from msltrans.ir.types import ScalarType, TensorType
from msltrans.layout import LinearLayout, decode_layout

# 8x8 tiles one simdgroup keeps: 32 tiles = 64 fp32 registers per lane for the result.
MAX_FRAGMENT_TILES = 32
_LANE_BASES = ((0, 2), (1, 0), (2, 0), (0, 4), (4, 0))
_INPUTS = {"f32", "f16", "bf16"}
_SIZE = {"f32": 4, "f16": 2, "bf16": 2}
PAD_BYTES = 16  # staging.PAD_BYTES (not imported: staging imports the emitter)


def _log2(n: int) -> int:
    return n.bit_length() - 1


def fragment_layout(m: int, n: int, warps: int) -> LinearLayout:
    """F(m, n, warps) (see the module docstring); m a multiple of 8·warps, n of 8."""
    tm = m // (8 * warps)
    reg = [(0, 1)] + [(0, 8 << t) for t in range(_log2(n // 8))] + \
        [(8 << t, 0) for t in range(_log2(tm))]
    warp = [(8 * tm << t, 0) for t in range(_log2(warps))]
    return LinearLayout((m, n), tuple(reg), _LANE_BASES, tuple(warp))


def linear_encoding(ll: LinearLayout) -> str:
    """`ll` (2-D) as the text of a Triton `#ttg.linear` encoding."""
    def bases(bs: tuple[tuple[int, ...], ...]) -> str:
        return "[" + ", ".join(f"[{a}, {b}]" for a, b in bs) + "]"

    return (f"#ttg.linear<{{register = {bases(ll.reg)}, lane = {bases(ll.lane)}, "
            f"warp = {bases(ll.warp)}, block = []}}>")


def fragment_encoding(m: int, n: int, warps: int) -> str:
    return linear_encoding(fragment_layout(m, n, warps))


def unit_layout(tm: int, tn: int, units_n: int, units: int, warps: int) -> LinearLayout | None:
    """The register layout of a resident K loop's accumulators (simdgroup.py's 2-D grid of
    units, batch 1): register 2*(j + tn*(i + tm*s)) + e is element e of tile (i, j) of unit
    w + s*warps, the unit at row (u / units_n)*8*tm, column (u % units_n)*8*tn. None unless
    every count is a power of two and every simdgroup has a unit in every slot."""
    slots = units // warps
    counts = (tm, tn, units_n, units, warps, slots)
    if any(c < 1 or c & (c - 1) for c in counts) or units % warps or units < units_n:
        return None
    cols = _log2(units_n)

    def unit_bit(b: int) -> tuple[int, int]:
        return (0, (8 * tn) << b) if b < cols else ((8 * tm) << (b - cols), 0)

    reg = [(0, 1)] + [(0, 8 << t) for t in range(_log2(tn))] + \
        [(8 << t, 0) for t in range(_log2(tm))] + \
        [unit_bit(_log2(warps) + b) for b in range(_log2(slots))]
    warp = [unit_bit(b) for b in range(_log2(warps))]
    shape = (8 * tm * (units // units_n), 8 * tn * units_n)
    return LinearLayout(shape, tuple(reg), _LANE_BASES, tuple(warp))


def is_fragment(ll: LinearLayout, m: int, n: int, warps: int) -> bool:
    """Whether `ll` (an m x n tensor's layout) is exactly F(m, n, warps)."""
    if ll.shape != (m, n) or m % (8 * warps) or n % 8 or m < 8 * warps:
        return False
    f = fragment_layout(m, n, warps)
    return (ll.reg, ll.lane, ll.warp) == (f.reg, f.lane, f.warp)


def tiles_per_warp(m: int, n: int, warps: int) -> int:
    return (m // (8 * warps)) * (n // 8)


def staged_bytes_bound(m: int, n: int, k: int, elem: str) -> int:
    """Threadgroup bytes A and B take when both are staged, in the larger orientation
    (fragment_mma.py stages each padded by 16 bytes per stored row, maybe transposed)."""
    size = _SIZE[elem]
    pad = PAD_BYTES // size

    def tile(rows: int, cols: int) -> int:
        return max(rows * (cols + pad), cols * (rows + pad)) * size

    return tile(m, k) + tile(k, n)


def _ops(ops: tuple[Op, ...]) -> Iterator[Op]:
    for op in ops:
        yield op
        for region in op.regions:
            for block in region.blocks:
                yield from _ops(block.ops)


def _element(v: object) -> str | None:
    t = getattr(v, "type", None)
    if isinstance(t, TensorType) and isinstance(t.element, ScalarType):
        return t.element.name
    return None


def eligible(op: Op, warps: int) -> tuple[int, int] | None:
    """(M, N) when tt.dot `op` can keep its result in fragments on `warps` simdgroups."""
    if len(op.operands) != 3 or len(op.results) != 1:
        return None
    a, b, c = op.operands
    out = op.results[0]
    if not all(isinstance(v.type, TensorType) and len(v.type.shape) == 2
               for v in (a, b, c, out)):
        return None
    ea, eb, eo = _element(a), _element(b), _element(out)
    if ea != eb or ea not in _INPUTS or eo != "f32" or c.type != out.type:
        return None
    if "inputPrecision" in op.text and "ieee" not in op.text.split("inputPrecision", 1)[1][:20]:
        return None
    m, n = out.type.shape
    k = a.type.shape[1]
    if m % (8 * warps) or n % 8 or k % 8 or m < 8 * warps:
        return None
    if tiles_per_warp(m, n, warps) > MAX_FRAGMENT_TILES:
        return None
    if staged_bytes_bound(m, n, k, ea) > THREADGROUP_MEMORY_BYTES:
        return None  # the staged paths decide (and refuse) as before
    enc = out.type.encoding or ""
    return (m, n) if enc.startswith("#ttg.blocked") else None


def _resident_candidate(op: Op, users: dict[int, list[tuple[Op, int]]],
                        uses: dict[int, int], producers: dict[int, Op]) -> bool:
    """tt.dot `op` looks like a K loop's resident accumulator (resident.py's pattern: C is
    an iter arg (a block argument, no producer) used only here, the result used only by
    the yield)."""
    c, out = op.operands[2], op.results[0]
    if c.id in producers or uses.get(c.id) != 1 or uses.get(out.id) != 1:
        return False
    return any(user.name == "scf.yield" for user, _ in users.get(out.id, []))


def plan_encodings(module: Module, warps: int, users: dict[int, list[tuple[Op, int]]],
                   uses: dict[int, int], producers: dict[int, Op]) -> dict[str, str]:
    """{#blocked encoding text: fragment #linear text} for the kernel (module docstring)."""
    shapes: dict[str, set[tuple[int, int]]] = {}
    blocked: set[str] = set()
    for fn in module.functions:
        for block in fn.body.blocks:
            for op in _ops(block.ops):
                if op.name != "tt.dot":
                    continue
                enc = op.results[0].type.encoding if isinstance(op.results[0].type,
                                                                TensorType) else None
                if enc is None:
                    continue
                mn = eligible(op, warps)
                if mn is None or _resident_candidate(op, users, uses, producers):
                    blocked.add(enc)
                    continue
                shapes.setdefault(enc, set()).add(mn)
    out = {}
    for enc, mns in shapes.items():
        ms = {m for m, _ in mns}
        if enc in blocked or len(ms) != 1:
            continue
        m = ms.pop()
        n = max(n for _, n in mns)
        if tiles_per_warp(m, n, warps) > MAX_FRAGMENT_TILES:
            continue
        out[enc] = fragment_encoding(m, n, warps)
        for mm, nn in mns:  # every dot's own shape must decode to its fragment layout
            if not is_fragment(decode_layout(out[enc], (mm, nn)), mm, nn, warps):
                del out[enc]
                break
    return out
