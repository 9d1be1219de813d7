"""pytest plugin for the Liger run (`-p liger_bf16`): answer Liger's bf16 gate for msltrans.

Liger's tests gate their bf16 cases on `test.utils.supports_bfloat16()`, which answers by
device: CUDA with compute capability 8.0+, XPU, NPU — and False for anything else, the CPU
included. Under msltrans the CPU tensors run Metal kernels, and msltrans lowers bf16 (MSL 3.1
`bfloat`, docs/semantics.md), so for msltrans's driver the truthful answer is True. The plugin
replaces that one function in the imported `test.utils` module before any test module is
collected (they read it at import, `from test.utils import supports_bfloat16`); Liger's files
stay as they are. With another Triton driver active it leaves the gate alone.

`--liger-bf16-only` keeps only the cases that carry the bf16 gate (a `skipif` whose reason
names bfloat16), i.e. exactly the cases Liger skipped here before.
"""

from __future__ import annotations

from typing import Any

import pytest

BF16_REASON = "bfloat16 not supported"


def msltrans_active() -> bool:
    import triton

    return type(triton.runtime.driver.active).__module__.startswith("msltrans.")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("msltrans").addoption(
        "--liger-bf16-only", action="store_true",
        help="keep only the cases gated on Liger's supports_bfloat16()")


def pytest_configure(config: pytest.Config) -> None:
    import test.utils as liger_test_utils

    if msltrans_active():
        liger_test_utils.supports_bfloat16 = lambda: True
    config.liger_bf16_gate = liger_test_utils.supports_bfloat16()  # type: ignore[attr-defined]


def _bf16_gated(item: pytest.Item) -> bool:
    return any(BF16_REASON in str(m.kwargs.get("reason", ""))
               for m in item.iter_markers("skipif"))


@pytest.hookimpl(tryfirst=True)  # before the conformance plugin samples
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--liger-bf16-only"):
        return
    keep = [i for i in items if _bf16_gated(i)]
    dropped = [i for i in items if not _bf16_gated(i)]
    items[:] = keep
    if dropped:
        config.hook.pytest_deselected(items=dropped)


def pytest_report_header(config: pytest.Config) -> Any:
    return f"liger_bf16: supports_bfloat16() answers {config.liger_bf16_gate}"  # type: ignore[attr-defined]
