"""Triton finds the plugin and picks the Metal driver only where it should."""

from __future__ import annotations

import subprocess
import sys

import pytest

from msltrans.backend import driver as driver_mod
from msltrans.backend.driver import MetalDriver
from msltrans.errors import MetalNonRecoverableError


def test_entry_point_registers_metal():
    import triton.backends

    entry = triton.backends.backends["metal"]
    assert entry.compiler.__name__ == "MetalBackend"
    assert entry.driver.__name__ == "MetalDriver"


def test_metal_driver_is_triton_default_here_in_a_fresh_process():
    # On a machine without a CUDA/AMD driver (CI), Metal is the one active driver.
    if driver_mod.other_gpu_driver_active():
        pytest.skip("a CUDA/AMD driver is active here; Metal correctly stays inactive")
    code = ("from triton.runtime.driver import driver; d = driver.active; "
            "print(type(d).__name__, d.engine_name, d.get_current_target().backend, "
            "d.get_active_torch_device())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["MetalDriver", "sim", "metal", "cpu"]


@pytest.mark.parametrize("stmt", ["from msltrans.backend.driver import MetalDriver",
                                  "import msltrans.backend.compiler"])
def test_plugin_modules_import_before_triton(stmt):
    # Importing a plugin module first starts Triton's backend discovery from inside it; the
    # package imports triton up front so discovery sees a whole driver module.
    code = f"{stmt}; import triton.backends as b; print(b.backends['metal'].driver.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["MetalDriver"]


def test_inactive_when_cuda_is_active(monkeypatch):
    monkeypatch.delenv("TRITON_DEFAULT_BACKEND", raising=False)
    monkeypatch.setattr(driver_mod, "other_gpu_driver_active", lambda: True)
    assert MetalDriver.is_active() is False


def test_default_backend_env_forces_metal(monkeypatch):
    monkeypatch.setattr(driver_mod, "other_gpu_driver_active", lambda: True)
    monkeypatch.setenv("TRITON_DEFAULT_BACKEND", "metal")
    assert MetalDriver.is_active() is True
    monkeypatch.setenv("TRITON_DEFAULT_BACKEND", "nvidia")
    assert MetalDriver.is_active() is False


def test_other_driver_probe_sees_an_active_foreign_driver(monkeypatch):
    import triton.backends

    class Active:
        @staticmethod
        def is_active():
            return True

    class Entry:
        driver = Active

    monkeypatch.setitem(triton.backends.backends, "fakegpu", Entry)
    assert driver_mod.other_gpu_driver_active() is True


@pytest.mark.parametrize("platform, mps, env, expected", [
    ("darwin", True, "", "mps"),
    ("darwin", False, "", "sim"),
    ("linux", True, "", "sim"),
    ("darwin", True, "sim", "sim"),
    ("linux", False, "SIM", "sim"),
    ("darwin", True, "mps", "mps"),
])
def test_engine_selection(monkeypatch, platform, mps, env, expected):
    monkeypatch.setattr(driver_mod.sys, "platform", platform)
    monkeypatch.setattr(driver_mod, "mps_available", lambda: mps)
    monkeypatch.setenv("MSLTRANS_ENGINE", env)
    assert driver_mod.select_engine() == expected


def test_bad_engine_name_refused(monkeypatch):
    monkeypatch.setenv("MSLTRANS_ENGINE", "cuda")
    with pytest.raises(MetalNonRecoverableError, match="MSLTRANS_ENGINE"):
        driver_mod.select_engine()


def test_forcing_mps_without_mps_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("MSLTRANS_ENGINE", "mps")
    monkeypatch.setattr("msltrans.runtime.mps.mps_available", lambda: False)
    with pytest.raises(MetalNonRecoverableError, match="no MPS device"):
        MetalDriver()


def test_device_properties_and_target(monkeypatch):
    monkeypatch.setenv("MSLTRANS_ENGINE", "sim")
    d = MetalDriver()
    props = d.utils.get_device_properties(None)
    assert props["max_shared_mem"] == 32768
    assert props["max_threads_per_threadgroup"] == 1024
    assert props["warpSize"] == 32 and props["multiprocessor_count"] >= 1
    assert props["max_num_regs"] > 0
    target = d.get_current_target()
    assert (target.backend, target.warp_size) == ("metal", 32)
    assert d.get_current_device() == "cpu" and d.get_current_stream("cpu") == 0  # torch.cpu's id
    with pytest.raises(MetalNonRecoverableError):
        d.set_current_device(1)


def test_benchmarker_times_a_sleep(monkeypatch):
    import time

    monkeypatch.setenv("MSLTRANS_ENGINE", "sim")
    bench = MetalDriver().get_benchmarker()
    ms = bench(lambda: time.sleep(0.002), warmup=1, rep=20)
    assert 1.9 <= ms <= 20
    lo, hi = bench(lambda: None, warmup=1, rep=2, quantiles=[0.2, 0.8])
    assert 0 <= lo <= hi < 1
