"""The simulator as a profiler: what a kernel does, counted, and an estimate of its time.

    with msltrans.sim.profile() as prof:
        kernel[grid](...)            # or lib.my_kernel(..., threads=..., group_size=...)
    print(prof.report(chip="apple-m4-max"))
    prof.kernels["my_kernel"].lines   # per source line, for tests and CI

While a profile is active, launches run a profiling build of their MSL (compiled once, with
every load and store instrumented) on one worker thread; results are the same as without.
Counted per kernel and per source line (the MSL line, and the Triton line the `// <op>
file:line` comment before it names): global and threadgroup load/store instructions by
access width (an instruction = the k-th execution of one access site by the lanes of one
simdgroup), bytes, 128-byte segments touched per global access (coalescing), threadgroup
bank conflicts (32 banks x 4 bytes), barriers, SIMD shuffles and reductions, simdgroup
multiply-accumulates, and each buffer's footprint. `report()` adds a roofline estimate of the
time on an Apple chip from public figures (msltrans/sim/profile_report.py).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from msltrans.sim.profile_records import LaunchProfile
from msltrans.sim.profile_report import (
    KernelStats,
    as_dict,
    chip_figures,
    format_report,
    kernel_stats,
)


@dataclass
class Profile:
    """The launches profiled inside one `profile()` block, and their report."""

    chip: str
    launches_per_kernel: int | None
    launches: list[LaunchProfile] = field(default_factory=list)

    def wants(self, kernel: str) -> bool:
        if self.launches_per_kernel is None:
            return True
        return sum(1 for launch in self.launches if launch.kernel == kernel) \
            < self.launches_per_kernel

    @property
    def kernels(self) -> dict[str, KernelStats]:
        """Per kernel name: a KernelStats (totals and per-line rows), launches merged."""
        return kernel_stats(self.launches)

    def report(self, chip: str | None = None) -> str:
        """A text report: per kernel, totals, an estimated time, and per-line rows."""
        return format_report(self.kernels, chip or self.chip)

    def to_dict(self, chip: str | None = None) -> dict[str, Any]:
        return as_dict(self.kernels, chip or self.chip)


_active = threading.local()


def active() -> Profile | None:
    """The innermost profile() block of this thread, if any."""
    stack = getattr(_active, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def profile(chip: str = "apple-m4-max", launches_per_kernel: int | None = None
            ) -> Iterator[Profile]:
    """Profile the simulator launches made inside the block (see the module docstring).

    `chip` is the default of `report()`; `launches_per_kernel` limits how many launches of
    each kernel are profiled (the others run the normal build, at full speed)."""
    chip_figures(chip)   # an unknown chip fails here, not at the end
    session = Profile(chip, launches_per_kernel)
    stack = getattr(_active, "stack", None)
    if stack is None:
        stack = _active.stack = []
    stack.append(session)
    try:
        yield session
    finally:
        stack.remove(session)
