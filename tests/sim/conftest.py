"""Simulator tests share one compile cache per session (a temp dir, so runs are hermetic)."""

from __future__ import annotations

import os
import tempfile

import pytest

_CACHE = tempfile.mkdtemp(prefix="msltrans-sim-cache-")
os.environ.setdefault("MSLTRANS_SIM_CACHE_DIR", _CACHE)


@pytest.fixture(scope="session")
def sim():
    """The simulator package, skipped cleanly when no clang >= 17 is installed."""
    import msltrans.sim as sim_module

    try:
        sim_module.find_compiler()
    except sim_module.CompilerNotFoundError as error:
        pytest.skip(str(error))
    return sim_module
