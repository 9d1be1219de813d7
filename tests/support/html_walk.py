"""A small HTML reader for the teaching page's tests (stdlib html.parser)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "br", "img", "input", "link", "hr", "source", "col", "area", "base", "wbr"}
RESOURCE_ATTRS = {"src", "href", "xlink:href", "action", "poster", "data", "srcset", "formaction",
                  "background", "manifest", "ping", "cite", "longdesc", "codebase"}
NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    column: str | None  # id of the enclosing .col, if any
    text: str = ""
    classes: set[str] = field(default_factory=set)


class PageReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.stack: list[Element] = []
        self.style = ""
        self.scripts: list[str] = []

    def _open(self, tag: str, attrs: list[tuple[str, str | None]]) -> Element:
        a = {k: v or "" for k, v in attrs}
        col = next((e.attrs.get("id") for e in reversed(self.stack)
                    if "col" in e.classes), None)
        if "col" in a.get("class", "").split():
            col = a.get("id")
        el = Element(tag, a, col, classes=set(a.get("class", "").split()))
        self.elements.append(el)
        return el

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = self._open(tag, attrs)
        if tag not in VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        if self.stack:
            top = self.stack[-1]
            if top.tag == "style":
                self.style += data
            elif top.tag == "script":
                self.scripts.append(data)
            for el in self.stack:
                if "ln" in el.classes:
                    el.text += data


def read_page(text: str) -> PageReader:
    reader = PageReader()
    reader.feed(text)
    reader.close()
    return reader


def external_references(text: str, page: PageReader | None = None) -> list[str]:
    """Everything in the page that would make a browser fetch something: resource
    attributes that are not `#fragment` or `data:`, `url(...)` to anything but a fragment or
    data, `@import`, <link>/<iframe>/<object>/<embed>/<base>, scripts with src, and any
    other attribute value naming a URL (XML namespace names excepted). `page`: the text
    already read."""
    page = page or read_page(text)
    bad = []
    for el in page.elements:
        if el.tag in ("link", "iframe", "object", "embed", "base", "frame", "audio", "video"):
            bad.append(f"<{el.tag}>")
        for k, v in el.attrs.items():
            v = v.strip()
            if k in RESOURCE_ATTRS and not (v.startswith("#") or v.startswith("data:")):
                bad.append(f"<{el.tag} {k}={v[:60]!r}>")
            elif "://" in v and not (k.startswith("xmlns") and v in NAMESPACES):
                if el.tag == "meta" and k == "content":
                    continue
                bad.append(f"<{el.tag} {k}={v[:60]!r}>")
            if "url(" in v:
                bad += [f"url({u})" for u in _bad_urls(v)]
    css = page.style + "".join(e.attrs.get("style", "") for e in page.elements)
    bad += [f"url({u})" for u in _bad_urls(css)]
    if "@import" in css:
        bad.append("@import")
    for script in page.scripts:
        if re.search(r"\b(fetch|XMLHttpRequest|WebSocket|importScripts|import\()", script):
            bad.append("script network call")
    return bad


def _bad_urls(text: str) -> list[str]:
    return [u for u in re.findall(r"url\(\s*['\"]?([^'\")]*)", text)
            if not (u.startswith("#") or u.startswith("data:"))]
