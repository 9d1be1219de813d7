"""A fresh simulator cache for one test, with the lanes pass already in it.

Tests of cold builds point MSLTRANS_SIM_CACHE_DIR at an empty directory. The lanes pass
(msltrans/sim/lanes/plugin.py) is built once per cache directory and its build takes 6-15 s
of CPU, none of which such a test is about: it is copied from the session's cache (built
there first if needed), so every kernel build in the test is still cold.
"""

from __future__ import annotations

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
