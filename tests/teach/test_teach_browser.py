"""The teaching page in a real headless browser (Chromium, Debian's package): it renders,
its script runs (line linking, the layouts' owner tables), and it needs no network.

Skipped when no Chromium is installed (`apt-get install chromium`; `.ci/run` installs it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from msltrans.teach import mapping
from msltrans.teach.draw import simdgroup_colours
from msltrans.teach.page import build_page
from msltrans.teach.values import layout_uses
from tests.support.html_walk import read_page
from tests.support.teach_pages import BY_NAME, ROOT, captured

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
needs_browser = pytest.mark.skipif(BROWSER is None, reason="no headless Chromium on this "
                                   "machine (apt-get install chromium; .ci/run installs it)")
KERNEL = "broadcast_2d"
WIDTH, HEIGHT = 1400, 1000
HIGHLIGHT = (255, 243, 176)  # .ln.hl in page.css


def test_ci_installs_the_browser() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "apt-get install" in ci and "chromium" in ci


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("page") / "page.html"
    path.write_text(build_page(captured(KERNEL)), encoding="utf-8")
    return path


def _chromium(tmp_path: Path, url: str, *flags: str, height: int = HEIGHT) -> str:
    assert BROWSER is not None
    argv = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--disable-extensions", "--mute-audio", "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--host-resolver-rules=MAP * ~NOTFOUND",  # no network: the page must not need it
            f"--window-size={WIDTH},{height}", *flags, url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _screenshot(tmp_path: Path, url: str, height: int = HEIGHT) -> np.ndarray:
    from PIL import Image

    shot = tmp_path / "shot.png"
    _chromium(tmp_path, url, f"--screenshot={shot}", height=height)
    with Image.open(shot) as im:
        return np.asarray(im.convert("RGB"))


def _line_of(text: str) -> int:
    lines = (ROOT / BY_NAME[KERNEL].file).read_text().split("\n")
    return next(n for n, t in enumerate(lines, 1) if text in t)


def _colours(img: np.ndarray) -> int:
    """Distinct RGB colours (packed into one integer: np.unique over rows is slow)."""
    rgb = img.reshape(-1, 3).astype(np.int64)
    return len(np.unique(rgb[:, 0] << 16 | rgb[:, 1] << 8 | rgb[:, 2]))


def _count(img: np.ndarray, rgb: tuple[int, ...], tol: int = 6) -> int:
    return int((np.abs(img.astype(int) - np.array(rgb)).max(axis=2) <= tol).sum())


@needs_browser
def test_page_renders_with_the_selected_line_lit(page: Path, tmp_path: Path) -> None:
    line = _line_of("out = x * scale")
    img = _screenshot(tmp_path, f"{page.as_uri()}#L0:{line}")
    assert img.shape == (HEIGHT, WIDTH, 3)
    # Non-trivial content: text in three columns, tables, colours; not a blank or error page.
    non_white = (img.min(axis=2) < 235).mean()
    colours = _colours(img)
    assert non_white > 0.08, non_white
    assert colours > 200, colours
    assert img.std() > 20
    # The script ran and lit the line's TTGIR and MSL (three columns of highlighted rows).
    lit = _count(img, HIGHLIGHT, tol=3)
    assert lit > 3000, lit
    cols = [(img[:, c0:c1] == HIGHLIGHT).all(axis=2).sum()
            for c0, c1 in ((0, WIDTH // 3), (WIDTH // 3, 2 * WIDTH // 3), (2 * WIDTH // 3, WIDTH))]
    assert all(c > 300 for c in cols), cols


@needs_browser
def test_layout_pictures_render(page: Path, tmp_path: Path) -> None:
    # The whole page in one tall window (headless screenshots of a scrolled page come out
    # blank): the pictures are below the code columns.
    img = _screenshot(tmp_path, page.as_uri(), height=9000)
    drawn = img[1100:]
    # Each simdgroup's colour covers a good area, in the pictures' region of the page.
    for rgb in simdgroup_colours(4):
        got = _count(drawn, tuple(int(round(255 * c)) for c in rgb))
        assert got > 5000, (rgb, got)
    assert (drawn.min(axis=2) < 235).mean() > 0.05


@needs_browser
def test_script_links_lines_and_builds_owner_tables(page: Path, tmp_path: Path) -> None:
    line = _line_of("out = x * scale")
    dom = _chromium(tmp_path, f"{page.as_uri()}#L0:{line}", "--dump-dom")
    body = re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-ready="1"' in body and f'data-selected="0:{line}"' in body
    parsed = read_page(dom)
    lit = [e for e in parsed.elements if "ln" in e.classes and ({"hl", "hl-op"} & e.classes)]
    key = f"0:{line}"
    assert lit and all(e.attrs.get("data-key") == key for e in lit)
    cap = captured(KERNEL)
    want_msl = sum(m.line == line and m.kind == "op" for m in mapping.msl_lines(cap.msl))
    want_ttgir = sum(t.line == line for t in mapping.ttgir_lines(cap.ttgir))
    assert sum(e.column == "col-msl" for e in lit) == want_msl > 0
    assert sum(e.column == "col-ttgir" for e in lit) == want_ttgir > 0
    # The hover script's owner table equals msltrans.layout's (a digest over all elements).
    from msltrans.layout import decode_layout
    from msltrans.teach.ownership import Ownership

    boxes = [e for e in parsed.elements if "svgbox" in e.classes]
    uses = layout_uses(cap.ttgir)
    assert len(boxes) == len(uses)
    for box, use in zip(boxes, uses, strict=True):
        owner = Ownership(decode_layout(use.encoding, use.shape)).owner
        digest = int(((np.arange(owner.size) + 1) * (owner + 1)).sum() % 1000000007)
        assert box.attrs["data-owner-digest"] == str(digest), use.short
