"""Ownership pictures, drawn with matplotlib (imported here only, on first use).

One figure per layout: each element of the tensor coloured by the simdgroup that owns it;
in the labelled panel the owner's lane (large) and register (`r3`) are written in and
replicated elements carry `xN` (N threads/registers hold a copy). A tensor larger than the
labelled panel gets an overview panel above it (every element, colour only, the labelled
window outlined). `panels` says where each panel sits, so the HTML page can answer hovers.
"""

from __future__ import annotations

import functools
import io
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from msltrans.teach.ownership import Ownership

DETAIL = (32, 32)  # the labelled window: at most this many rows and columns
CELL = 0.34  # inches per labelled cell
OVERVIEW_MAX = 5.0  # inches: the overview's longer side at most
OVERVIEW_CELLS = 256  # rows/cols the overview shows at most (from the top left)
TITLE_H, FOOT_H, GAP, SIDE = 1.2, 0.8, 0.5, 0.7
# SVG text stays text (small, selectable) with a short font list; ids reproducible.
RC = {"svg.fonttype": "none", "svg.hashsalt": "msltrans",
      "font.sans-serif": ["DejaVu Sans", "Arial"], "font.monospace": ["DejaVu Sans Mono"]}


@dataclass(frozen=True)
class Panel:
    """A drawn window of the grid: its box in the figure (fractions, y from the top)."""

    x0: float
    y0: float
    x1: float
    y1: float
    row0: int
    col0: int
    rows: int
    cols: int

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in
                ("x0", "y0", "x1", "y1", "row0", "col0", "rows", "cols")}


def simdgroup_colours(n: int) -> np.ndarray:
    """[n, 3] RGB: distinct colours for simdgroups 0..n-1 (tab20's strong half first)."""
    from matplotlib import colormaps

    tab20 = colormaps["tab20"].colors
    pal = list(tab20[0::2]) + list(tab20[1::2]) + list(colormaps["tab20b"].colors)
    return np.array([pal[i % len(pal)] for i in range(max(n, 1))], dtype=float)


def _rgb(own: Ownership, warp: np.ndarray, copies: np.ndarray) -> np.ndarray:
    colours = simdgroup_colours(own.layout.num_warps)
    rgb = colours[np.clip(warp, 0, None)]
    rgb[copies > 1] = 0.55 * rgb[copies > 1] + 0.45  # replicated: lighter
    rgb[copies == 0] = 1.0
    return rgb


def _window(own: Ownership, limit: tuple[int, int]) -> tuple[int, int]:
    rows, cols = own.grid
    return min(rows, limit[0]), min(cols, limit[1])


def draw(own: Ownership, title: str, subtitle: str = "") -> tuple[Any, list[Panel]]:
    """The figure (a matplotlib Figure, no pyplot state) and its panels."""
    import matplotlib

    with matplotlib.rc_context(RC):
        return _draw(own, title, subtitle)


def _draw(own: Ownership, title: str, subtitle: str) -> tuple[Any, list[Panel]]:
    import textwrap

    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    rows, cols = own.grid
    drow, dcol = _window(own, DETAIL)
    detail_w, detail_h = dcol * CELL, drow * CELL
    overview = (rows, cols) != (drow, dcol)
    orow, ocol = _window(own, (OVERVIEW_CELLS, OVERVIEW_CELLS))
    ocell = min(CELL, OVERVIEW_MAX / max(orow, ocol))
    over_w, over_h = (ocol * ocell, orow * ocell) if overview else (0.0, 0.0)
    width = max(detail_w, over_w, 6.5) + 2 * SIDE
    chars = int((width - 2 * SIDE) * 72 / 4.4)  # 7 pt monospace
    sub = [w for line in subtitle.split("\n") for w in textwrap.wrap(line, chars) or [""]]
    title_h = TITLE_H + 0.13 * max(0, len(sub) - 2)
    height = title_h + (over_h + GAP if overview else 0.0) + detail_h + FOOT_H
    fig = Figure(figsize=(width, height))
    warp, lane, reg, copies = own.owner_grid()
    panels: list[Panel] = []

    def place(w: float, h: float, top: float) -> tuple[Any, Panel, float]:
        x0 = (width - w) / 2
        ax = fig.add_axes((x0 / width, 1 - (top + h) / height, w / width, h / height))
        return ax, Panel(x0 / width, top / height, (x0 + w) / width, (top + h) / height,
                         0, 0, 0, 0), top + h

    top = title_h
    if overview:
        ax, p, top = place(over_w, over_h, top)
        ax.imshow(_rgb(own, warp[:orow, :ocol], copies[:orow, :ocol]), aspect="auto",
                  interpolation="nearest", extent=(0, ocol, orow, 0))
        ax.add_patch(Rectangle((0, 0), dcol, drow, fill=False, lw=1.5, ec="black"))
        _axes_style(ax, own, orow, ocol, fine=False)
        shown = "" if (orow, ocol) == (rows, cols) else \
            f" (top-left {orow}x{ocol} of {rows}x{cols})"
        ax.set_title(f"all elements{shown}; the outlined window is labelled below",
                     fontsize=8, loc="left")
        panels.append(Panel(p.x0, p.y0, p.x1, p.y1, 0, 0, orow, ocol))
        top += GAP
    ax, p, top = place(detail_w, detail_h, top)
    ax.imshow(_rgb(own, warp[:drow, :dcol], copies[:drow, :dcol]), aspect="auto",
              interpolation="nearest", extent=(0, dcol, drow, 0))
    big: dict[str, list[tuple[float, float]]] = {}
    small: dict[str, list[tuple[float, float]]] = {}
    for i in range(drow):
        for j in range(dcol):
            if copies[i, j] == 0:
                continue
            big.setdefault(str(lane[i, j]), []).append((j + 0.5, i + 0.42))
            tag = f"r{reg[i, j]}" + (f" x{copies[i, j]}" if copies[i, j] > 1 else "")
            small.setdefault(tag, []).append((j + 0.5, i + 0.8))
    _stamp(fig, ax, big, 8.0, bold=True, kind="lane")
    _stamp(fig, ax, small, 5.5, bold=False, kind="reg")
    _axes_style(ax, own, drow, dcol, fine=True)
    panels.append(Panel(p.x0, p.y0, p.x1, p.y1, 0, 0, drow, dcol))
    fig.text(SIDE / width, 1 - 0.3 / height, title, fontsize=11, fontweight="bold", va="top")
    if sub:
        fig.text(SIDE / width, 1 - 0.58 / height, "\n".join(sub), fontsize=7, va="top",
                 family="monospace", linespacing=1.3)
    _legend(fig, own, width, height)
    return fig, panels


def _stamp(fig: Any, ax: Any, where: dict[str, list[tuple[float, float]]], size: float,
           bold: bool, kind: str) -> None:
    """Write each distinct label once as a glyph path and stamp it at all its cells (one
    PathCollection per label: the SVG defines the path once and reuses it; thousands of
    Text artists would take seconds to lay out). The SVG group of label L is `<kind>-L`."""
    from matplotlib.collections import PathCollection
    from matplotlib.transforms import Affine2D

    points_to_pixels = Affine2D().scale(1 / 72) + fig.dpi_scale_trans
    for label, xy in where.items():
        stamps = PathCollection([_glyphs(label, size, bold)], offsets=xy,
                                offset_transform=ax.transData, transform=points_to_pixels,
                                facecolors="black", edgecolors="none")
        stamps.set_gid(f"{kind}-{label.replace(' ', '_')}")
        stamps.set_clip_on(False)  # inside the axes anyway; saves a clip group per stamp
        ax.add_collection(stamps, autolim=False)


@functools.lru_cache(maxsize=512)
def _glyphs(label: str, size: float, bold: bool) -> Any:
    """The label's outline in points, centred on (0, 0)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.path import Path
    from matplotlib.textpath import TextPath

    prop = FontProperties(family="DejaVu Sans", weight="bold" if bold else "normal")  # bundled
    path = TextPath((0, 0), label, size=size, prop=prop)
    box = path.get_extents()
    return Path(path.vertices - [(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2], path.codes)


def _axes_style(ax: Any, own: Ownership, rows: int, cols: int, fine: bool) -> None:
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.tick_params(labelsize=6, length=2)
    step = 4 if fine else max(4, 1 << max(0, (max(rows, cols) // 8 - 1).bit_length()))
    ax.set_xticks([c + 0.5 for c in range(0, cols, step)], [str(c) for c in range(0, cols, step)])
    row_names = _row_names(own)
    ax.set_yticks([r + 0.5 for r in range(0, rows, step)],
                  [row_names(r) for r in range(0, rows, step)])
    if fine:
        for k in range(1, cols):
            ax.axvline(k, color="white", lw=0.4)
        for k in range(1, rows):
            ax.axhline(k, color="white", lw=0.4)
    if len(own.shape) >= 3:
        for k in range(own.block_rows, rows, own.block_rows):
            ax.axhline(k, color="black", lw=1.2)
    for side in ax.spines.values():
        side.set_linewidth(0.6)


def _row_names(own: Ownership) -> Any:
    shape = own.shape
    if len(shape) == 1:
        return lambda r: str(r * own.grid[1])  # the first element of the wrapped row
    if len(shape) == 2:
        return str
    lead = shape[:-2]

    def name(r: int) -> str:
        block, inner = divmod(r, shape[-2])
        idx = np.unravel_index(block, lead)
        return "(" + ", ".join(str(int(i)) for i in idx) + f", {inner})"
    return name


def _legend(fig: Any, own: Ownership, width: float, height: float) -> None:
    from matplotlib.patches import Patch

    n = own.layout.num_warps
    colours = simdgroup_colours(n)
    handles = [Patch(color=colours[w], label=f"simdgroup {w}") for w in range(n)]
    fig.legend(handles=handles, loc="lower left", ncol=min(n, 8), fontsize=7, frameon=False,
               bbox_to_anchor=(SIDE / width, 0.22 / height), handlelength=1.2,
               columnspacing=1.0, borderaxespad=0.0)
    fig.text(SIDE / width, 0.08 / height,
             "cell: lane (large), register r#; xN = held by N threads/registers (lighter)",
             fontsize=7, ha="left", va="bottom")


_SVG_HEAD_RE = re.compile(r"^.*?(?=<svg)", re.S)
_METADATA_RE = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_COMMENT_RE = re.compile(r"\s*<!--.*?-->", re.S)
_NO_ROTATE_RE = re.compile(r' transform="rotate\(-0 [^)]*\)"')


_ID_RE = re.compile(r'\bid="([^"]+)"')
_REF_RE = re.compile(r'(url\(#|href="#)([^")]+)')


def to_svg(fig: Any, prefix: str = "") -> str:
    """Inline SVG text: no XML prologue/DOCTYPE and no metadata block (nothing that names
    an external resource). Every id gets `prefix` (and every `#id` reference with it), so
    several pictures can share one HTML page."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = _METADATA_RE.sub("", _SVG_HEAD_RE.sub("", buf.getvalue(), count=1))
    text = _NO_ROTATE_RE.sub("", _COMMENT_RE.sub("", text)).strip()
    if prefix:
        text = _ID_RE.sub(lambda m: f'id="{prefix}{m.group(1)}"', text)
        text = _REF_RE.sub(lambda m: f"{m.group(1)}{prefix}{m.group(2)}", text)
    return text


def save(fig: Any, path: str, dpi: int = 100) -> None:
    """PNG or SVG by the file name's extension."""
    import matplotlib

    fmt = "svg" if str(path).lower().endswith(".svg") else "png"
    meta = {"Date": None} if fmt == "svg" else {"Software": None}
    with matplotlib.rc_context(RC):
        fig.savefig(path, format=fmt, dpi=dpi, metadata=meta)
