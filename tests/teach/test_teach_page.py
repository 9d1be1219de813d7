"""`msltrans dump --html`: the page of every example and tutorial kernel (what
scripts/teaching_views.py makes), its structure, links, launch table, self-containment."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from msltrans import cli
from msltrans.teach import mapping
from msltrans.teach.values import layout_uses
from scripts.teaching_views import KERNELS, make
from tests.support.html_walk import PageReader, external_references, read_page
from tests.support.teach_pages import BY_NAME, ROOT, captured


def _check_structure(name: str, html: str) -> PageReader:
    cap = captured(name)
    page = read_page(html)
    lines = [e for e in page.elements if "ln" in e.classes]
    by_col: dict[str | None, list] = {}
    for e in lines:
        by_col.setdefault(e.column, []).append(e)
    assert set(by_col) == {"col-src", "col-ttgir", "col-msl"}
    src_ids = {e.attrs["id"] for e in by_col["col-src"]}
    # The MSL column is the MSL, line for line; every line maps to a source line of the page
    # or is marked prologue / helper / epilogue / unlocated (an op Triton gave no location).
    msl = by_col["col-msl"]
    assert [e.text for e in msl] == cap.msl.rstrip("\n").split("\n")
    for e in msl:
        kind = e.attrs["data-kind"]
        if kind == "op":
            assert f"src-{e.attrs['data-key']}" in src_ids, e.attrs
        else:
            assert kind in ("prologue", "helper", "epilogue", "unlocated"), e.attrs
            assert "data-key" not in e.attrs
    # Every TTGIR line with a location points at a source line the page shows.
    keyed = [e for e in by_col["col-ttgir"] if "data-key" in e.attrs]
    assert keyed and all(f"src-{e.attrs['data-key']}" in src_ids for e in keyed)
    assert len(by_col["col-ttgir"]) == len(mapping.ttgir_lines(cap.ttgir))
    # Source lines with a counterpart are marked, and the kernel's own lines are among them.
    mapped = {e.attrs["data-key"] for e in by_col["col-src"] if "mapped" in e.classes}
    assert mapped == {e.attrs["data-key"] for e in keyed + msl if "data-key" in e.attrs}
    # Launch metadata: every buffer of the kernel, the threads and memory.
    text = html.replace("&#34;", '"')
    for p in cap.metadata["params"]:
        assert f"[[buffer({p['buffer_index']})]]" in text and f"<code>{p['name']}</code>" in text
    assert f"{cap.metadata['threads_per_group']} ({cap.metadata['num_warps']} simdgroups" in text
    # Each layout is listed and has its figure.
    uses = layout_uses(cap.ttgir)
    figures = [e for e in page.elements if e.tag == "figure"]
    assert [f.attrs["id"] for f in figures] == [u.anchor for u in uses]
    links = {e.attrs["href"] for e in page.elements if e.tag == "a" and "href" in e.attrs}
    assert {f"#{u.anchor}" for u in uses} <= links
    assert external_references(html, page) == []
    return page


KEPT = ["examples/*.py", *(f"msltrans/workloads/{name}.py" for name in
                             ("softmax_layernorm", "grouped_matmul", "dropout", "attention"))]


def _launched_kernels(path: Path) -> set[str]:
    """@triton.jit functions of a file that no other @triton.jit function of it calls."""
    tree = ast.parse(path.read_text())
    jit = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef) and any(
        "jit" in ast.unparse(d) for d in f.decorator_list)}
    called = {n.func.id for f in jit.values() for n in ast.walk(f)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in jit}
    return set(jit) - called


def test_every_kept_kernel_is_in_the_gallery() -> None:
    kept = {(str(p.relative_to(ROOT)), k) for pattern in KEPT for p in sorted(ROOT.glob(pattern))
            for k in _launched_kernels(p)}
    assert kept == {(k.file, k.kernel) for k in KERNELS}
    assert len({k.name for k in KERNELS}) == len(KERNELS)


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_page_and_pictures_of_every_example_and_tutorial(name: str, tmp_path: Path) -> None:
    """What scripts/teaching_views.py makes: the page, its pictures, one PNG per layout."""
    from PIL import Image

    page_path, pngs, html = make(BY_NAME[name], tmp_path)
    assert page_path.read_text(encoding="utf-8") == html
    page = _check_structure(name, html)
    uses = layout_uses(captured(name).ttgir)
    boxes = [e for e in page.elements if "svgbox" in e.classes]
    assert len(boxes) == len(uses) == len(pngs)
    ids = [e.attrs["id"] for e in page.elements if "id" in e.attrs]
    assert len(ids) == len(set(ids)), "SVG ids must not collide between pictures"
    for box in boxes:
        data = json.loads(box.attrs["data-layout"])
        assert data["panels"] and data["rows"] * data["cols"] == _numel(data["shape"])
    assert sum(e.tag == "svg" for e in page.elements) == len(boxes)
    for png in pngs:
        with Image.open(png) as im:
            img = np.asarray(im.convert("RGB"))
        assert img.shape[0] > 150 and _colours(img) > 20, png


def _colours(img: np.ndarray) -> int:
    """Distinct RGB colours (packed into one integer: np.unique over rows is slow)."""
    rgb = img.reshape(-1, 3).astype(np.int64)
    return len(np.unique(rgb[:, 0] << 16 | rgb[:, 1] << 8 | rgb[:, 2]))


def _numel(shape: list[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def test_self_containment_check_sees_external_references() -> None:
    # The checker itself: each of these would fetch something.
    for bad in ['<img src="https://x.invalid/a.png">', '<link rel="stylesheet" href="a.css">',
                '<script src="a.js"></script>', '<div style="background: url(a.png)"></div>',
                '<style>@import "x.css";</style>', '<svg><use xlink:href="a.svg#x"/></svg>']:
        assert external_references(f"<html><body>{bad}</body></html>"), bad
    assert external_references('<svg xmlns="http://www.w3.org/2000/svg"><use '
                               'xlink:href="#a"/><g clip-path="url(#p)"/></svg>') == []


REFUSED = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def count_kernel(counts_ptr, x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0)
        tl.atomic_max(counts_ptr + x, 1, mask=offs < n)


    @triton.jit
    def broken_kernel(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, no_such_name(offs))
''')


def _dump_html(tmp_path: Path, capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(["dump", *argv])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def refused_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "refused.py"
    path.write_text(REFUSED)
    return path


def test_refusal_is_shown_at_its_line(refused_file, tmp_path, capsys) -> None:
    out = tmp_path / "page.html"
    code, stdout, err = _dump_html(tmp_path, capsys, str(refused_file), "--kernel", "count_kernel",
                                   "--signature", "counts_ptr=*i64,x_ptr=*i32,n=i32",
                                   "--constexpr", "BLOCK=64", "--html", str(out))
    assert code == 0 and f"wrote {out}" in stdout
    # signed int64 max: Metal's one 64-bit atomic (atomic_ulong) compares unsigned
    assert "refused" in err and "64-bit atomic signed max" in err
    html = out.read_text()
    page = read_page(html)
    banner = next(e for e in page.elements if e.attrs.get("id") == "refusal")
    assert banner.attrs["class"] == "refusal"
    assert "Refused in the msl stage at refused.py:10" in html
    src = next(e for e in page.elements if e.attrs.get("id") == "src-0:10")
    assert "refused" in src.classes and "tl.atomic_max" in src.text
    inline = page.elements[page.elements.index(src) + 2]  # the line number span, then this
    assert "refusal-inline" in inline.classes
    ttgir = [e for e in page.elements if e.column == "col-ttgir" and "refused" in e.classes]
    assert [e.attrs["data-op"] for e in ttgir] == ["tt.atomic_rmw"]
    assert not [e for e in page.elements if e.column == "col-msl" and "ln" in e.classes]
    assert "No MSL: cannot lower `tt.atomic_rmw`" in html
    assert external_references(html) == []


def test_front_end_error_is_shown_at_its_line(refused_file, tmp_path, capsys) -> None:
    out = tmp_path / "broken.html"
    code, _, err = _dump_html(tmp_path, capsys, str(refused_file), "--kernel", "broken_kernel",
                              "--constexpr", "BLOCK=32", "--html", str(out))
    assert code == 0, err
    html = out.read_text()
    assert "Refused in the front end stage at refused.py:16" in html
    assert "no_such_name" in html
    page = read_page(html)
    src = next(e for e in page.elements if e.attrs.get("id") == "src-0:16")
    assert "refused" in src.classes
