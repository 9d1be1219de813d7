"""Benchmarking that works on both engines: host clock around synchronised calls.

`torch.mps.Event` timing has been unreliable, and the simulator has no events at all, so
each timed call is bracketed by the engine's `synchronize()` (a no-op on the simulator,
`torch.mps.synchronize()` on MPS) and measured with `time.perf_counter`. The figure
therefore includes one synchronisation per call (~tens of µs on MPS).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

_MODES = ("min", "max", "mean", "median", "all")


class HostEvent:
    """`torch.cuda.Event`-shaped timer on the host clock, for `triton.testing.do_bench`."""

    def __init__(self, enable_timing: bool = True, synchronize: Callable[[], None] | None = None
                 ) -> None:
        self._sync = synchronize or (lambda: None)
        self.t = 0.0

    def record(self, stream: Any = None) -> None:
        self._sync()
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        self._sync()

    def elapsed_time(self, end: HostEvent) -> float:
        return (end.t - self.t) * 1e3


class HostDeviceInterface:
    """The slice of `torch.cuda` that Triton's testing helpers call, for the simulator."""

    def __init__(self, synchronize: Callable[[], None]) -> None:
        self.synchronize = synchronize

    def Event(self, enable_timing: bool = True) -> HostEvent:  # noqa: N802 - torch's name
        return HostEvent(enable_timing, self.synchronize)

    def current_device(self) -> int:
        return 0

    def current_stream(self, device: Any = None) -> int:
        return 0


def make_do_bench(synchronize: Callable[[], None], clear_cache: Callable[[], None]
                  ) -> Callable[..., Any]:
    def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100,
                 grad_to_none: Any = None, quantiles: list[float] | None = None,
                 return_mode: str = "mean") -> Any:
        """Time `fn` in ms, like `triton.testing.do_bench` (same arguments and return forms)."""
        if return_mode not in _MODES:
            raise ValueError(f"return_mode must be one of {_MODES}")
        fn()
        synchronize()
        start = time.perf_counter()
        for _ in range(5):
            clear_cache()
            fn()
        synchronize()
        estimate_ms = max((time.perf_counter() - start) * 1e3 / 5, 1e-3)
        for _ in range(max(1, int(warmup / estimate_ms))):
            fn()
        times = []
        for _ in range(max(1, int(rep / estimate_ms))):
            if grad_to_none is not None:
                for x in grad_to_none:
                    x.grad = None
            clear_cache()
            synchronize()
            t0 = time.perf_counter()
            fn()
            synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        if quantiles is not None:
            ordered = sorted(times)
            picks = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in quantiles]
            return picks[0] if len(picks) == 1 else picks
        if return_mode == "all":
            return times
        return {"min": min, "max": max, "mean": statistics.fmean,
                "median": statistics.median}[return_mode](times)

    return do_bench
