"""Which Inductor kernels ran through msltrans: a launch count per kernel name.

A model that ran only aten kernels proves nothing about msltrans, so the route counts the
Triton kernels it actually dispatched (`msltrans.inductor.launches()`), per process.
"""

from __future__ import annotations

import collections
import threading
from typing import Any

from msltrans.runtime.launch import Launcher

_lock = threading.Lock()
_counts: collections.Counter[str] = collections.Counter()


class InductorLauncher(Launcher):
    """The launcher of a kernel Inductor compiled for CPU or MPS tensors."""

    def __call__(self, grid_x: int, grid_y: int, grid_z: int, *rest: Any) -> None:
        super().__call__(grid_x, grid_y, grid_z, *rest)
        if grid_x * grid_y * grid_z > 0:
            with _lock:
                _counts[self.name] += 1


def launches() -> dict[str, int]:
    """Launches per Triton kernel name since the process started (or the last reset)."""
    with _lock:
        return dict(_counts)


def reset_launches() -> None:
    with _lock:
        _counts.clear()
