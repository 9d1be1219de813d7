"""The driver's device id is torch's: Triton's JIT caches are keyed by it."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from msltrans.backend.driver import MetalDriver, device_id
from msltrans.errors import MetalNonRecoverableError


def test_device_id_follows_torch() -> None:
    assert device_id("cpu") == torch.cpu.current_device() == "cpu"
    assert device_id("mps") == 0  # torch.mps: one device, index 0, no current_device()


def test_set_current_device_accepts_only_the_engine_device(monkeypatch) -> None:
    monkeypatch.setenv("MSLTRANS_ENGINE", "sim")
    d = MetalDriver()
    for ok in (None, 0, "cpu", "cpu:0", torch.device("cpu"), torch.device("cpu", 0)):
        d.set_current_device(ok)
    for bad in (1, "mps", "cuda:0", torch.device("cuda", 0)):
        with pytest.raises(MetalNonRecoverableError, match="one device, 'cpu'"):
            d.set_current_device(bad)


@triton.jit
def _store_seven(out_ptr):
    tl.store(out_ptr, 7)


def test_jit_cache_is_keyed_by_torch_current_device(recording) -> None:
    from triton.runtime.driver import driver

    out = torch.zeros(1, dtype=torch.int32)
    _store_seven[(1,)](out)
    key = getattr(torch, driver.active.get_active_torch_device().type).current_device()
    assert list(_store_seven.device_caches) == [key]
    kernel_cache = _store_seven.device_caches[key][0]
    assert len(kernel_cache) == 1
    kernel_cache.clear()  # what upstream tests do to force a recompile (and the cache hook)
    _store_seven[(1,)](out)
    assert len(kernel_cache) == 1
    assert len(recording.calls) == 2
