"""The simulator's cache in tests: a fresh one with the lanes pass already in it, and a
build's metadata looked up by source name.

Tests of cold builds point MSLTRANS_SIM_CACHE_DIR at an empty directory. The lanes pass
(msltrans/sim/lanes/plugin.py) is built once per cache directory and its build takes 6-15 s
of CPU, none of which such a test is about: it is copied from the session's cache (built
there first if needed), so every kernel build in the test is still cold.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest


def fresh_cache(monkeypatch: pytest.MonkeyPatch, path: Path) -> Path:
    from msltrans.sim.cache import cache_dir
    from msltrans.sim.compiler import find_compiler
    from msltrans.sim.lanes.plugin import plugin

    built = plugin(find_compiler())
    path.mkdir(parents=True, exist_ok=True)
    if built is not None and built.parent == cache_dir():
        shutil.copy2(built, path / built.name)
    monkeypatch.setenv("MSLTRANS_SIM_CACHE_DIR", str(path))
    return path


def build_metadata(name: str) -> dict:
    """The cache metadata (`<key>.json`: kernels, phases, pipeline, element loops) of the
    newest build of the source named `name`; LookupError if the cache has none."""
    from msltrans.sim.cache import cache_dir

    found = []
    for meta in cache_dir().glob("*.json"):
        data = json.loads(meta.read_text())
        if isinstance(data, dict) and data.get("name") == name:
            found.append((meta.stat().st_mtime, data))
    if not found:
        raise LookupError(f"no build of `{name}` in {cache_dir()}")
    return max(found, key=lambda item: item[0])[1]
