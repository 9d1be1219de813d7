"""A launcher that counts its launches per kernel name.

The torch.compile route (msltrans.inductor) needs to know which Triton kernels actually ran
through msltrans (a model that ran only aten kernels proves nothing about msltrans), so the
plugin's driver gives the kernels Inductor compiled for CPU or MPS tensors this launcher;
`msltrans.inductor.launches()` reads the counts, per process, and
`msltrans.inductor.kernel_buffers()` the pointer arguments and hidden buffers of each
kernel launched (the route holds them within Metal's table: msltrans/inductor/pointer_bound.py).
"""

from __future__ import annotations

import collections
import threading
from typing import Any

from msltrans.runtime.launch import Launcher

_lock = threading.Lock()
_counts: collections.Counter[str] = collections.Counter()
# kernel name -> (pointers, hidden buffers: scalar struct, argument buffer of the pointers past
# the table, debug buffer), the widest kernel of that name (Inductor reuses
# names such as triton_poi_fused_add_0 across graphs)
_buffers: dict[str, tuple[int, int]] = {}


class CountingLauncher(Launcher):
    """A `Launcher` that counts every launch with a non-empty grid under the kernel's name."""

    def __init__(self, src: Any, metadata: Any, engine: Any) -> None:
        super().__init__(src, metadata, engine=engine)
        params = list(getattr(metadata, "params", None) or [])
        pointers = sum(p.get("kind") == "pointer" for p in params)
        scalars = pointers < len(params)
        spilled = any(p.get("slot") is not None for p in params)  # an argument buffer
        debug = bool(getattr(metadata, "msl_debug_sites", None))
        hidden = int(scalars) + int(spilled) + int(debug)
        self._buffers = (pointers, hidden)

    def __call__(self, grid_x: int, grid_y: int, grid_z: int, *rest: Any) -> None:
        super().__call__(grid_x, grid_y, grid_z, *rest)
        if grid_x * grid_y * grid_z > 0:
            with _lock:
                _counts[self.name] += 1
                _buffers[self.name] = max(self._buffers, _buffers.get(self.name, (0, 0)))


def launches() -> dict[str, int]:
    """Launches per Triton kernel name since the process started (or the last reset)."""
    with _lock:
        return dict(_counts)


def kernel_buffers() -> dict[str, tuple[int, int]]:
    """(pointer arguments, hidden buffers: scalar struct and debug buffer) per kernel name
    launched since the process started (or the last reset)."""
    with _lock:
        return dict(_buffers)


def reset_launches() -> None:
    with _lock:
        _counts.clear()
        _buffers.clear()
