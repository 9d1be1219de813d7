"""What one profiled simulator dispatch counted: the runtime's output records (ctypes
mirrors of runtime/profile.h) and their Python form, `LaunchProfile`.

`msltrans.sim.profiling` holds the profile session that collects these; the report
(`msltrans.sim.profile_report`) turns them into per-line statistics and a time estimate.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
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
