"""Owners write a dot operand into a padded row-major threadgroup tile, 16 bytes at a time.

A tile of shape (batch, rows, cols) lives at `dst[(b * rows + row) * ld + col]` with the row
length `ld` = cols + 16 bytes' worth of elements (the padding hand-written Metal GEMMs use
against bank conflicts). When the operand's layout gives each thread runs of consecutive
registers along `cols` (its first register bases are 1, 2, 4, ... along the last dim, as
every #blocked layout Triton's coalescing picks for a dot operand), each run is written
with one `uintN` store of up to 16 bytes, aligned because `ld` and the run start are
multiples of the run; other layouts write element by element. Only one owner of each
element writes (replicas skip).
"""

from __future__ import annotations

from dataclasses import dataclass

from msltrans.ir.model import Value
from msltrans.lower.dot.info import BYTES, render
from msltrans.lower.emitter import LANE, WARP, Emitter
from msltrans.lower.layout_table import LayoutRef, run_dim
from msltrans.lower.memory.vector_access import VectorPlan, pack, unpack

PAD_BYTES = 16


def padded(cols: int, elem: str, pad: bool = True) -> int:
    """The row length of a staged tile (elements)."""
    return cols + (PAD_BYTES // BYTES[elem] if pad else 0)


@dataclass(frozen=True)
class Tile:
    """Where a (batch x rows x cols) operand lives in threadgroup memory."""

    name: str  # the threadgroup pointer's MSL name
    elem: str  # staged element type
    rows: int
    cols: int
    ld: int  # padded row length
    # Stored transposed: cols rows of `ld` (padded rows) elements, element (r, c) at
    # c * ld + r; the MMA loads it with simdgroup_load's transpose flag. Chosen when the
    # operand's registers run along its rows, so the stores stay 16 bytes wide.
    transposed: bool = False

    @property
    def stored_rows(self) -> int:
        return self.cols if self.transposed else self.rows


def _width(L: LayoutRef, elem: str, tile: Tile) -> int:
    """Elements per store: the layout's run along cols, capped at 16 bytes; 1 if none."""
    ll = L.ll
    last = len(ll.shape) - (2 if tile.transposed else 1)  # the dim stored contiguously
    dim, k = run_dim(ll.reg)
    if dim != last or k == 0:
        return 1
    width = min(1 << k, PAD_BYTES // BYTES[elem])
    others = ll.reg[k:] + ll.lane + ll.warp
    while width > 1 and (any(b[last] % width for b in others) or tile.ld % width
                         or width * BYTES[elem] < 4):
        width //= 2
    return width


def index_expr(L: LayoutRef, tile: Tile, reg: str = "r", row_lo: int = 0) -> str:
    """MSL: the staged index of register `reg`'s element (rows from `row_lo` on)."""
    rank = len(L.ll.shape)
    at = f"({reg}, {LANE}, {WARP})"
    row_dim, col_dim = (rank - 1, rank - 2) if tile.transposed else (rank - 2, rank - 1)
    row = f"{L.coord_fn(row_dim)}{at}"
    if row_lo:
        row = f"({row} - {row_lo})"
    if rank == 3:
        row = f"({L.coord_fn(0)}{at} * {tile.stored_rows} + {row})"
    return f"{row} * {tile.ld} + {L.coord_fn(col_dim)}{at}"


def _guard(L: LayoutRef, rows: tuple[int, int] | None, owners: bool) -> str:
    """`if (...) ` for the registers that take part: owners only (writes), rows in a pass."""
    conds = []
    if owners and not L.owns_all:
        conds.append(f"{L.owns_fn}(r, {LANE}, {WARP})")
    if rows is not None:
        row = f"{L.coord_fn(len(L.ll.shape) - 2)}(r, {LANE}, {WARP})"
        conds.append(f"{row} >= {rows[0]} && {row} < {rows[1]}")
    return f"if ({' && '.join(conds)}) " if conds else ""


def stage(em: Emitter, src: Value, tile: Tile, conv: str,
          rows: tuple[int, int] | None = None) -> int:
    """Emit the writes of `src`'s registers into `tile` (only rows [lo, hi), at row - lo,
    when `rows` is given); returns the elements per store."""
    L = em.layout(src)
    width = _width(L, tile.elem, tile)
    guard = _guard(L, rows, owners=True)
    index = index_expr(L, tile, row_lo=rows[0] if rows else 0)
    name = em.name(src)
    if width == 1:
        render(em, "stage_scalar", dst=tile.name, regs=L.regs, index=index, guard=guard,
               value=f"{conv}({name}[r])")
        return 1
    p = VectorPlan(width, tile.elem, L.regs)
    render(em, "stage_vector", dst=tile.name, regs=L.regs, width=width, word=p.word,
           index=index, guard=guard, packed=pack(p, name, "r", conv))
    return width


def read_back(em: Emitter, dst: str, L: LayoutRef, tile: Tile, out_t: str,
              rows: tuple[int, int] | None = None) -> int:
    """dst[r] = out_t(tile[element of register r]) for every register (of rows [lo, hi)),
    `width` elements per threadgroup read where the layout has runs; returns the width."""
    width = _width(L, tile.elem, tile)
    guard = _guard(L, rows, owners=False)
    index = index_expr(L, tile, row_lo=rows[0] if rows else 0)
    if width == 1:
        render(em, "read_back_scalar", dst=dst, src=tile.name, regs=L.regs, index=index,
               guard=guard, value=f"{out_t}({tile.name}[{index}])")
        return 1
    p = VectorPlan(width, tile.elem, L.regs)
    lines = [line.replace(" = as_type", f" = {out_t}(as_type").replace(";", ");")
             for line in unpack(p, dst, "r")]
    render(em, "read_back_vector", src=tile.name, regs=L.regs, width=width, word=p.word,
           index=index, guard=guard, unpack=lines)
    return width
