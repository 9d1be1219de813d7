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
import ctypes
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# Site kinds (runtime/profile.h).
DEVICE_LOAD, DEVICE_STORE, TG_LOAD, TG_STORE = 1, 2, 3, 4
TG_BARRIER, SIMD_BARRIER, SIMD_SHUFFLE, SIMD_REDUCE, SIMD_OTHER = 10, 11, 12, 13, 14
MMA, MATRIX_LOAD, MATRIX_STORE = 15, 16, 17
SEGMENT_BYTES = 128
BANKS, BANK_BYTES = 32, 4
MMA_FLOPS = 2 * 8 * 8 * 8


class SiteRecord(ctypes.Structure):
    _fields_ = [("pc", ctypes.c_ulonglong * 2), ("kind", ctypes.c_uint), ("width", ctypes.c_uint),
                ("lane_ops", ctypes.c_ulonglong), ("instructions", ctypes.c_ulonglong),
                ("bytes", ctypes.c_ulonglong), ("segments", ctypes.c_ulonglong),
                ("wavefronts", ctypes.c_ulonglong)]


class RegionRecord(ctypes.Structure):
    _fields_ = [("start", ctypes.c_ulonglong), ("size", ctypes.c_ulonglong),
                ("read_segments", ctypes.c_ulonglong), ("write_segments", ctypes.c_ulonglong)]


class ProfileOut(ctypes.Structure):
    _fields_ = [("regions", ctypes.POINTER(RegionRecord)), ("n_regions", ctypes.c_uint),
                ("n_sites", ctypes.c_uint), ("sites", ctypes.POINTER(SiteRecord))]


@dataclass
class Site:
    """One counted code location of a launch (raw: code offsets, not yet lines)."""

    pc: tuple[int, int]
    kind: int
    width: int
    lane_ops: int
    instructions: int
    bytes: int
    segments: int
    wavefronts: int


@dataclass
class LaunchProfile:
    """What one profiled dispatch counted."""

    kernel: str
    library: Any                     # the profiling build (a Library): path and MSL source
    threads: tuple[int, ...]
    group_size: tuple[int, ...]
    sites: list[Site]
    read_bytes: int                  # distinct 128-byte segments read, in bytes (footprint)
    write_bytes: int


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
    def kernels(self) -> dict[str, Any]:
        """Per kernel name: a KernelStats (totals and per-line rows), launches merged."""
        from msltrans.sim.profile_report import kernel_stats

        return kernel_stats(self.launches)

    def report(self, chip: str | None = None) -> str:
        """A text report: per kernel, totals, an estimated time, and per-line rows."""
        from msltrans.sim.profile_report import format_report

        return format_report(self.kernels, chip or self.chip)

    def to_dict(self, chip: str | None = None) -> dict[str, Any]:
        from msltrans.sim.profile_report import as_dict

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
    from msltrans.sim.profile_report import chip_figures

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


def make_out(regions: list[tuple[int, int]]) -> tuple[ProfileOut, Any]:
    """The runtime's output record for a dispatch over these (address, size) buffers."""
    array = (RegionRecord * max(len(regions), 1))(*[RegionRecord(a, s, 0, 0)
                                                    for a, s in regions])
    out = ProfileOut(regions=ctypes.cast(array, ctypes.POINTER(RegionRecord)),
                     n_regions=len(regions), n_sites=0)
    return out, array


def collect(out: ProfileOut, array: Any, kernel: str, library: Any, threads: tuple[int, ...],
            group_size: tuple[int, ...]) -> LaunchProfile:
    sites = [Site((int(r.pc[0]), int(r.pc[1])), int(r.kind), int(r.width), int(r.lane_ops),
                  int(r.instructions), int(r.bytes), int(r.segments), int(r.wavefronts))
             for r in (out.sites[i] for i in range(out.n_sites))]
    read = sum(int(array[i].read_segments) for i in range(out.n_regions)) * SEGMENT_BYTES
    write = sum(int(array[i].write_segments) for i in range(out.n_regions)) * SEGMENT_BYTES
    return LaunchProfile(kernel, library, threads, group_size, sites, read, write)
