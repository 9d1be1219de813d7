"""Test-session hooks shared by every test directory."""

from __future__ import annotations

import os
import shutil
import tempfile
import traceback
from typing import Any

import pytest

from tests.support.triton_features import DOT_ACC_REASON, dot_infers_out_dtype

_CREATED: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """One simulator compile cache for the whole test run, new for each run (hermetic: a run
    builds every kernel it uses) and removed at its end. Made by the process pytest starts
    with, before it starts any pytest-xdist worker: the workers inherit it through the
    environment, so a kernel is built once, not once per worker (the cache's locks,
    msltrans/sim/cache.py, make a worker wait for the other's build of the same entry).
    MSLTRANS_SIM_CACHE_DIR, when set, is used instead and kept (a warm cache for reruns)."""
    if os.environ.get("MSLTRANS_SIM_CACHE_DIR") or hasattr(config, "workerinput"):
        return
    path = tempfile.mkdtemp(prefix="msltrans-sim-cache-")
    os.environ["MSLTRANS_SIM_CACHE_DIR"] = path
    _CREATED.append(path)


def pytest_unconfigure(config: pytest.Config) -> None:
    while _CREATED:
        path = _CREATED.pop()
        os.environ.pop("MSLTRANS_SIM_CACHE_DIR", None)
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def sim_driver_only() -> None:
    """Skips a test unless Triton's active driver is msltrans's Metal driver on the simulator
    engine (modules that launch through `kernel[grid]` take it with
    `pytestmark = pytest.mark.usefixtures("sim_driver_only")`)."""
    from triton.runtime.driver import driver

    active = driver.active
    if type(active).__name__ != "MetalDriver" or active.engine_name != "sim":
        pytest.skip("needs the Metal driver on the simulator engine")


def _is_dot_accumulator_refusal(exc: BaseException | None) -> bool:
    """Whether `exc` (or what it was raised from) is the assertion in Triton's `tl.dot`
    semantics that the accumulator be of `out_dtype`."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, AssertionError) and exc.__traceback__ is not None:
            last = traceback.extract_tb(exc.__traceback__)[-1]
            if last.name == "dot" and last.filename.replace("\\", "/").endswith(
                    "triton/language/semantic.py"):
                return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]):  # noqa: ANN201
    """A kernel that gives `tl.dot` a non-fp32 accumulator needs a Triton that infers
    `out_dtype` from it (3.8 on): below that, its refusal is a skip with the reason."""
    outcome = yield
    report = outcome.get_result()
    if (call.when == "call" and call.excinfo is not None and not dot_infers_out_dtype()
            and _is_dot_accumulator_refusal(call.excinfo.value)):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {DOT_ACC_REASON}")
