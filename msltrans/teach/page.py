"""The side-by-side page: @triton.jit source | TTGIR | MSL, launch metadata, layout pictures.

One self-contained HTML file: the CSS, the script and every picture (inline SVG) are in it;
nothing is fetched. Lines are linked by a key `<source file index>:<line>`: hovering or
clicking a line of any column highlights the lines of the other two with the same key.
"""

from __future__ import annotations

import functools
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msltrans.teach import mapping
from msltrans.teach.capture import Capture
from msltrans.teach.values import LayoutUse, layout_uses

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates" / "teach"


@dataclass
class Line:
    text: str
    key: str | None = None  # "<file index>:<line>", None when not from a source line
    kind: str = ""
    op: str | None = None
    html: str = ""  # the text, escaped, with layout names linked (TTGIR)
    title: str = ""


@dataclass
class SourceFile:
    path: str  # as shown
    lines: list[Line] = field(default_factory=list)


@dataclass
class Picture:
    use: LayoutUse
    svg: str = ""
    summary: str = ""
    data: str = ""  # JSON for the page's hover script
    error: str = ""
    png: Path | None = None


@functools.lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
                              undefined=jinja2.StrictUndefined, autoescape=True,
                              trim_blocks=True, lstrip_blocks=True)


def _shown_path(path: str) -> str:
    """Relative to the working directory where possible (no machine paths in the page)."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return p.name


class _Sources:
    """The source files the locations name; keys by full path and by base name."""

    def __init__(self, first: Path | None) -> None:
        self.files: list[SourceFile] = []
        self.index: dict[str, int] = {}
        self.by_base: dict[str, int | None] = {}
        if first is not None and first.suffix != ".ttgir":
            self.add(str(first))

    def add(self, path: str) -> int | None:
        key = str(Path(path).resolve()) if Path(path).exists() else path
        if key in self.index:
            return self.index[key]
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        idx = len(self.files)
        self.index[key] = idx
        base = Path(path).name
        self.by_base[base] = None if base in self.by_base else idx  # ambiguous → unmapped
        self.files.append(SourceFile(_shown_path(path), [
            Line(t, f"{idx}:{n}") for n, t in enumerate(text.split("\n"), start=1)]))
        return idx

    def key(self, file: str | None, line: int | None) -> str | None:
        if file is None or line is None:
            return None
        idx = self.add(file) if "/" in file or "\\" in file else self.by_base.get(file)
        return None if idx is None else f"{idx}:{line}"


def _ttgir(cap: Capture, sources: _Sources, uses: list[LayoutUse]) -> list[Line]:
    links = sorted(((u.short, u.anchor) for u in uses), key=lambda s: -len(s[0]))
    first_anchor: dict[str, str] = {}
    for short, anchor in links:
        first_anchor.setdefault(short, anchor)
    pattern = re.compile("|".join(re.escape(s) + (r"(?!\w)" if s[-1].isalnum() else "")
                                  for s, _ in links)) if links else None
    out = []
    for t in mapping.ttgir_lines(cap.ttgir or ""):
        key = sources.key(t.file, t.line)
        title = f"{Path(t.file).name}:{t.line}" if t.file and t.line else "no source location"
        if t.name:
            title += f" ({t.name})"
        out.append(Line(t.text, key, t.kind, t.op, _linked(t.text, pattern, first_anchor),
                        title))
    return out


def _linked(text: str, pattern: re.Pattern[str] | None, anchors: dict[str, str]) -> str:
    if pattern is None:
        return html.escape(text)
    parts, last = [], 0
    for m in pattern.finditer(text):
        parts.append(html.escape(text[last:m.start()]))
        parts.append(f'<a href="#{anchors[m.group(0)]}">{html.escape(m.group(0))}</a>')
        last = m.end()
    parts.append(html.escape(text[last:]))
    return "".join(parts)


def _msl(cap: Capture, sources: _Sources) -> list[Line]:
    out = []
    for m in mapping.msl_lines(cap.msl) if cap.msl else []:
        key = sources.key(m.file, m.line)
        if m.kind == "op":
            title = f"{m.op} from {m.file}:{m.line}"
        elif m.kind == "unlocated":
            title = f"{m.op}: Triton gave this op no source location"
        else:
            title = {"prologue": "kernel prologue (signature, setup): no single source line",
                     "helper": "helper code (layout helpers, includes, noinline functions)",
                     "epilogue": "end of the kernel"}[m.kind]
        out.append(Line(m.text, key, m.kind, m.op, html.escape(m.text), title))
    return out


def _pictures(uses: list[LayoutUse], draw_pictures: bool, png_dir: Path | None) -> list[Picture]:
    from msltrans.errors import MetalNonRecoverableError
    from msltrans.layout import decode_layout
    from msltrans.teach.ownership import Ownership

    out = []
    for n, use in enumerate(uses):
        pic = Picture(use)
        try:
            own = Ownership(decode_layout(use.encoding, use.shape))
        except MetalNonRecoverableError as exc:
            pic.error = str(exc)
            out.append(pic)
            continue
        pic.summary = own.summary()
        if draw_pictures:
            from msltrans.teach import draw

            fig, panels = draw.draw(own, f"{use.short}  tensor {use.shape_text}",
                                    "values: " + ", ".join(use.values[:12]))
            pic.svg = draw.to_svg(fig, prefix=f"f{n}-")
            if png_dir is not None:
                png_dir.mkdir(parents=True, exist_ok=True)
                pic.png = png_dir / f"{use.anchor.removeprefix('layout-')}.png"
                draw.save(fig, str(pic.png))
            data = own.to_json()
            data["panels"] = [p.to_json() for p in panels]
            pic.data = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
        out.append(pic)
    return out


def _launch(cap: Capture) -> dict[str, Any]:
    md = cap.metadata
    threads = md.get("threads_per_group")
    return {
        "name": md.get("name", cap.kernel),
        "num_warps": md.get("num_warps", cap.num_warps),
        "threads": threads,
        "shared": md.get("shared"),
        "params": list(md.get("params") or []),
        "grid": (f"a launch kernel[(gx, gy, gz)] dispatches threads = (gx * {threads}, gy, gz)"
                 f" with group_size = ({threads}, 1, 1): one threadgroup per program, "
                 "tl.program_id(axis) = threadgroup_position_in_grid.xyz, one Triton warp "
                 "= one simdgroup of 32 lanes") if threads else "",
    }


def build_page(cap: Capture, draw_pictures: bool = True, png_dir: Path | None = None,
               pictures: list[Picture] | None = None) -> str:
    """The HTML text of the page; with `png_dir`, each layout picture is also saved there as
    PNG, and `pictures` (if a list is given) receives the pictures drawn."""
    sources = _Sources(cap.path)
    uses = layout_uses(cap.ttgir) if cap.ttgir else []
    ttgir = _ttgir(cap, sources, uses)
    msl = _msl(cap, sources)
    refusal = cap.refusal
    refused_key = sources.key(refusal.file, refusal.line) if refusal else None
    drawn = _pictures(uses, draw_pictures, png_dir)
    if pictures is not None:
        pictures.extend(drawn)
    env = _environment()
    return env.get_template("page.html.j2").render(
        cap=cap, path=_shown_path(str(cap.path)), sources=sources.files, ttgir=ttgir, msl=msl,
        mapped={line.key for line in ttgir + msl if line.key},
        pictures=drawn, launch=_launch(cap), refusal=refusal,
        refused_key=refused_key, css=(TEMPLATE_DIR / "page.css").read_text(),
        script=(TEMPLATE_DIR / "page.js").read_text())
