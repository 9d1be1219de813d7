"""A launcher that counts its launches per kernel name.

The torch.compile route (msltrans.inductor) needs to know which Triton kernels actually ran
through msltrans (a model that ran only aten kernels proves nothing about msltrans), so the
plugin's driver gives the kernels Inductor compiled for CPU or MPS tensors this launcher;
`msltrans.inductor.launches()` reads the counts, per process.
"""

from __future__ import annotations

import collections
import threading
from typing import Any

from msltrans.runtime.launch import Launcher

_lock = threading.Lock()
_counts: collections.Counter[str] = collections.Counter()


class CountingLauncher(Launcher):
    """A `Launcher` that counts every launch with a non-empty grid under the kernel's name."""

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
