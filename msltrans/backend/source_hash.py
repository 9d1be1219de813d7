"""A hash of msltrans's own sources and templates, for Triton's kernel cache key.

Triton's cache key covers Triton's files, the kernel source and the options, but not a
plugin's code: without this, editing a lowering would keep serving MSL from the old one.
Every file of the package counts (Python, Jinja templates, simulator headers), plus the
repository-level `templates/` folder when running from a checkout. Contents are read once
per process; a cache hit then costs one dict lookup.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
_SKIP_SUFFIXES = {".pyc", ".pyo", ".so", ".o"}


def _files(root: Path) -> list[Path]:
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part in _SKIP_DIRS for part in rel.parts) or path.suffix in _SKIP_SUFFIXES:
            continue
        if path.is_file():
            out.append(path)
    return sorted(out)


@functools.cache
def source_hash(root: Path = PACKAGE_ROOT) -> str:
    digest = hashlib.sha256()
    roots = [root]
    checkout_templates = root.parent / "templates"
    if checkout_templates.is_dir():
        roots.append(checkout_templates)
    for base in roots:
        for path in _files(base):
            digest.update(str(path.relative_to(base.parent)).encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()
