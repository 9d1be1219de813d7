"""Fixtures: a Metal driver whose dispatches are recorded, and the fake lowering."""

from __future__ import annotations

import pytest

from msltrans._triton_compat import clear_device_caches
from tests.support.plugin_fakes import RecordingEngine, fake_lower_module, install_engine


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def fake_lowering(monkeypatch, private_cache):
    from msltrans.backend import compiler

    monkeypatch.setattr(compiler, "lower_ttgir", fake_lower_module)


@pytest.fixture
def recording(fake_lowering):
    """The active Triton driver is a MetalDriver that records dispatches; yields the engine."""
    from triton.runtime.driver import driver

    from msltrans.backend.driver import MetalDriver

    # Kernels compiled in an earlier test keep launchers bound to that test's engine.
    clear_device_caches()
    metal = MetalDriver()
    engine = RecordingEngine()
    install_engine(metal, engine)
    driver.set_active(metal)
    try:
        yield engine
    finally:
        driver.reset_active()
