"""Running a simulator library in each of its execution modes (lanes, fibers)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest


def assert_same_bytes_in_each_mode(expected: list[np.ndarray],
                                   run: Callable[[], list[np.ndarray]],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`run()`'s outputs have `expected`'s bytes in lanes mode and on fibers."""
    for mode in ("lanes", "fibers"):
        monkeypatch.setenv("MSLTRANS_SIM_LANES", mode)
        for want, got in zip(expected, run(), strict=True):
            assert want.tobytes() == got.tobytes(), mode
