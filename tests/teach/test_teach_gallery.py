"""Every example and tutorial kernel the project keeps has its page and pictures
(scripts/teaching_views.py; the complete build with every picture is `-m slow`)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from msltrans.teach.values import layout_uses
from scripts.teaching_views import KERNELS, make
from tests.support.html_walk import external_references, read_page
from tests.support.teach_pages import ROOT, captured

KEPT = ["examples/*.py", "tests/e2e/tutorials/*.py"]


def _launched_kernels(path: Path) -> set[str]:
    """@triton.jit functions of a file that no other @triton.jit function of it calls."""
    tree = ast.parse(path.read_text())
    jit = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef) and any(
        "jit" in ast.unparse(d) for d in f.decorator_list)}
    called = {n.func.id for f in jit.values() for n in ast.walk(f)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in jit}
    return set(jit) - called


def test_every_kept_kernel_has_a_page() -> None:
    kept = {(str(p.relative_to(ROOT)), k) for pattern in KEPT for p in sorted(ROOT.glob(pattern))
            for k in _launched_kernels(p)}
    listed = {(k.file, k.kernel) for k in KERNELS}
    assert kept == listed
    assert len({k.name for k in KERNELS}) == len(KERNELS)


@pytest.mark.slow
def test_every_page_and_picture(tmp_path: Path) -> None:
    """The whole gallery as scripts/teaching_views.py makes it: pages and layout PNGs."""
    from PIL import Image

    for k in KERNELS:
        page, pngs, html = make(k, tmp_path)
        assert page.exists() and external_references(html) == []
        uses = layout_uses(captured(k.name).ttgir)
        assert len(pngs) == len(uses) and all(p.exists() for p in pngs)
        svgs = [e for e in read_page(html).elements if e.tag == "svg"]
        assert len(svgs) == len(uses)
        for png in pngs:
            with Image.open(png) as im:
                img = np.asarray(im.convert("RGB"))
            assert len(np.unique(img.reshape(-1, 3), axis=0)) > 20
