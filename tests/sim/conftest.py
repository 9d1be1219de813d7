"""The simulator fixture (the run's compile cache is set up in tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def sim():
    """The simulator package, skipped cleanly when no clang >= 17 is installed."""
    import msltrans.sim as sim_module

    try:
        sim_module.find_compiler()
    except sim_module.CompilerNotFoundError as error:
        pytest.skip(str(error))
    return sim_module
