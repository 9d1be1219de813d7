"""The ownership map and its picture against the layout's own `coord()`, for every
(register, lane, simdgroup), on the layouts the test suite uses."""

from __future__ import annotations

import random
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from msltrans.layout import LinearLayout, decode_layout
from msltrans.teach import draw
from msltrans.teach.ownership import Ownership
from msltrans.teach.values import layout_uses
from tests.support.teach_pages import BY_NAME, captured
from tests.support.triton_layouts import blocked_text


def _split(total: int, rank: int, rng: random.Random) -> list[int]:
    out = [1] * rank
    for _ in range(total.bit_length() - 1):
        out[rng.randrange(rank)] *= 2
    return out


def _random_encodings(seed: int, count: int) -> list[tuple[str, tuple[int, ...]]]:
    """Blocked (rank 1-3), slice, FMA dot operand and linear layouts, drawn as the layout
    tests (tests/layout/test_decode.py) draw them."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        rank = rng.choice([1, 2, 2, 3])
        warps = rng.choice([1, 2, 4, 8, 16])
        spt = [rng.choice([1, 1, 2, 4]) for _ in range(rank)]
        tpw, wpc = _split(32, rank, rng), _split(warps, rank, rng)
        order = list(range(rank))
        rng.shuffle(order)
        shape = tuple(rng.choice([1, 2, 4, 8, 16, 32, 64]) for _ in range(rank))
        while np.prod(shape) > 4096:  # keep the per-(register, lane, warp) loop quick
            shape = tuple(max(1, d // 2) for d in shape)
        blocked = blocked_text(spt, tpw, wpc, order)
        kind = rng.choice(["blocked", "slice", "dot_op", "linear"])
        if kind == "slice" and rank >= 2:
            dim = rng.randrange(rank)
            out.append((f"#ttg.slice<{{dim = {dim}, parent = {blocked}}}>",
                        shape[:dim] + shape[dim + 1:]))
        elif kind == "dot_op" and rank >= 2:
            out.append((f"#ttg.dot_op<{{opIdx = {rng.randrange(2)}, parent = {blocked}, "
                        "kWidth = 0}>", shape))
        elif kind == "linear":
            ll = decode_layout(blocked, shape)
            out.append((_linear_text(ll), shape))
        else:
            out.append((blocked, shape))
    return out


def _linear_text(ll: LinearLayout) -> str:
    def fmt(bases: tuple) -> str:
        return "[" + ", ".join("[" + ", ".join(map(str, b)) + "]" for b in bases) + "]"
    return (f"#ttg.linear<{{register = {fmt(ll.reg)}, lane = {fmt(ll.lane)}, "
            f"warp = {fmt(ll.warp)}, block = []}}>")


def _kernel_layouts(names: list[str] | None = None) -> list[tuple[str, tuple[int, ...]]]:
    """Every (encoding, shape) of these (default: all) example and tutorial kernels."""
    out: list[tuple[str, tuple[int, ...]]] = []
    for name in names or sorted(BY_NAME):
        out += [(u.encoding, u.shape) for u in layout_uses(captured(name).ttgir)
                if (u.encoding, u.shape) not in out]
    return out


def _check_against_coord(enc: str, shape: tuple[int, ...]) -> Ownership:
    ll = decode_layout(enc, shape)
    own = Ownership(ll)
    R, L = ll.num_regs, ll.num_lanes
    held: dict[tuple[int, ...], list[int]] = {}
    want = []
    for g in range(own.threads_x_regs):
        c = ll.coord(g % R, (g // R) % L, g // (R * L))
        want.append(c)
        held.setdefault(c, []).append(g)
    bad = np.nonzero((own.coords != np.array(want, dtype=np.int64)).any(axis=1))[0]
    assert bad.size == 0, (enc, shape, [own.split(int(g)) for g in bad[:4]])
    g_all = np.arange(own.threads_x_regs)
    assert [x.tolist() for x in own.split(g_all)] == [
        (g_all % R).tolist(), ((g_all // R) % L).tolist(), (g_all // (R * L)).tolist()]
    assert own.flat.tolist() == [ll.flat(c) for c in want]
    assert int(own.copies.sum()) == own.threads_x_regs
    counts = np.zeros(own.numel, dtype=np.int64)
    for c, gs in held.items():
        counts[ll.flat(c)] = len(gs)
    assert (own.copies == counts).all(), (enc, shape)
    # The owner is the holder `locate` names (checked on up to 256 elements, evenly spread:
    # locate solves a GF(2) system per element).
    for e in range(0, own.numel, max(1, own.numel // 256)):
        c = tuple(int(x) for x in np.unravel_index(e, shape))
        g = own.owner[e]
        assert g in held[c] and tuple(int(x) for x in own.split(g)) == ll.locate(c)
        hs = own.holders(e)
        assert hs[0] == ll.locate(c)
        assert sorted(hs) == sorted((h % R, (h // R) % L, h // (R * L)) for h in held[c])
    # The drawn grid: every cell is the element at row-major index row * cols + col.
    rows, cols = own.grid
    assert rows * cols == own.numel
    warp_g, lane_g, reg_g, copies_g = own.owner_grid()
    r, lane, warp = own.split(own.owner)
    assert (warp_g.ravel() == warp).all() and (lane_g.ravel() == lane).all()
    assert (reg_g.ravel() == r).all() and (copies_g.ravel() == own.copies).all()
    return own


@pytest.mark.parametrize("seed", range(3))
def test_ownership_equals_coord_on_random_layouts(seed: int) -> None:
    for enc, shape in _random_encodings(seed, 30):
        _check_against_coord(enc, shape)


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_ownership_equals_coord_on_every_kernel_layout(name: str) -> None:
    layouts = _kernel_layouts([name])
    assert layouts
    for enc, shape in layouts:
        _check_against_coord(enc, shape)


def test_the_kernels_use_many_kinds_of_layout() -> None:
    layouts = _kernel_layouts()
    assert len(layouts) > 50
    kinds = {re.match(r"#ttg\.(\w+)", e).group(1) for e, _ in layouts}
    assert {"blocked", "slice", "dot_op"} <= kinds, kinds


def _svg_labels(svg: str, kind: str) -> dict[str, list[tuple[float, float]]]:
    """label → positions (figure fractions, y from the top) of the stamped labels."""
    ns = "{http://www.w3.org/2000/svg}"
    root = ET.fromstring(svg)
    width, height = (float(v) for v in root.attrib["viewBox"].split()[2:])
    out: dict[str, list[tuple[float, float]]] = {}
    for g in root.iter(f"{ns}g"):
        gid = g.attrib.get("id", "")
        if not gid.startswith(f"{kind}-"):
            continue
        spots = out.setdefault(gid[len(kind) + 1:], [])
        uses = list(g.iter(f"{ns}use"))
        for use in uses:  # a label stamped several times: defined once, then <use x= y=>
            spots.append((float(use.attrib["x"]) / width, float(use.attrib["y"]) / height))
        if not uses:  # stamped once: the glyph path itself, centred on its cell
            for path in g.iter(f"{ns}path"):
                nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", path.attrib["d"])]
                xs, ys = nums[0::2], nums[1::2]
                spots.append(((min(xs) + max(xs)) / 2 / width,
                              (min(ys) + max(ys)) / 2 / height))
    return out


def _picture_check(enc: str, shape: tuple[int, ...]) -> None:
    """The picture writes, in each cell of the labelled window, the lane and register of a
    thread whose `coord()` is that cell's element, the one `locate` names (read back from
    the SVG by position), and how many hold it."""
    ll = decode_layout(enc, shape)
    own = Ownership(ll)
    fig, panels = draw.draw(own, "t", enc)
    svg = draw.to_svg(fig)
    detail = panels[-1]
    rows, cols = own.grid
    lane_g = np.zeros((detail.rows, detail.cols), dtype=int)
    reg_g, copies_g = lane_g.copy(), lane_g.copy()
    for i in range(detail.rows):
        for j in range(detail.cols):
            c = tuple(int(x) for x in np.unravel_index(i * cols + j, shape))
            r, lane, warp = ll.locate(c)
            assert ll.coord(r, lane, warp) == c
            lane_g[i, j], reg_g[i, j] = lane, r
    for g in range(own.threads_x_regs):
        R, L = ll.num_regs, ll.num_lanes
        i, j = divmod(ll.flat(ll.coord(g % R, (g // R) % L, g // (R * L))), cols)
        if i < detail.rows and j < detail.cols:
            copies_g[i, j] += 1
    seen = np.zeros((detail.rows, detail.cols), dtype=int)
    for kind in ("lane", "reg"):
        for label, spots in _svg_labels(svg, kind).items():
            for fx, fy in spots:
                col = int((fx - detail.x0) / (detail.x1 - detail.x0) * detail.cols)
                row = int((fy - detail.y0) / (detail.y1 - detail.y0) * detail.rows)
                if kind == "lane":
                    assert label == str(lane_g[row, col]), (enc, shape, row, col)
                    seen[row, col] += 1
                else:
                    want = f"r{reg_g[row, col]}" + \
                        (f"_x{copies_g[row, col]}" if copies_g[row, col] > 1 else "")
                    assert label == want, (enc, shape, row, col)
                    seen[row, col] += 10
    assert (seen == 11).all()  # every cell of the window: one lane, one register label


@pytest.mark.parametrize("enc, shape", [
    (blocked_text([1, 4], [4, 8], [4, 1], [1, 0]), (16, 32)),
    (blocked_text([1], [32], [4], [0]), (64,)),  # 1-D: wrapped rows
    (blocked_text([2, 1], [8, 4], [2, 2], [0, 1]), (64, 64)),  # overview + window
    (f"#ttg.slice<{{dim = 1, parent = {blocked_text([1, 1], [32, 1], [4, 1], [1, 0])}}}>",
     (16,)),  # replicated: lanes 16-31 and every simdgroup hold copies
    (blocked_text([1, 1, 2], [2, 4, 4], [1, 2, 2], [2, 1, 0]), (2, 8, 8)),  # 3-D: stacked
])
def test_picture_labels_equal_coord(enc: str, shape: tuple[int, ...]) -> None:
    _picture_check(enc, shape)


def test_picture_labels_on_kernel_layouts() -> None:
    layouts = _kernel_layouts(["tutorial03_matmul", "tutorial06_attn_fwd"])
    for enc, shape in layouts[:: max(1, len(layouts) // 4)]:
        _picture_check(enc, shape)
