"""Guarded staging mappings, reused across dispatches.

Every dispatch copies its arguments into mappings whose end touches a PROT_NONE page (so
one element past a buffer faults). Mapping fresh ones each time costs a page fault per 4 KB
touched and an munmap (a 1M-element vector add spent more time there than running); so
mappings go back to a pool after the dispatch and a later dispatch with a buffer of the
same size takes one back. A reused mapping's padding (in front of the data, and after it up
to the alignment) is cleared, so it reads as a fresh one would. At most BUDGET bytes stay
pooled; the oldest go first.
"""

from __future__ import annotations

import collections
import ctypes
import mmap
import threading
from typing import Any

from msltrans import settings
from msltrans.sim import native

try:
    import torch
except ImportError:  # pragma: no cover - torch is a dependency; numpy-only use still works
    torch = None  # type: ignore[assignment]

BUDGET = 256 << 20
PAGE = mmap.PAGESIZE
# Copies into and out of staging at least this large use torch's intra-op threads (a 1M
# float vector add moves 24 MB per dispatch: one thread spent longer copying than running).
PARALLEL_COPY_BYTES = 1 << 20


def default_workers() -> int:
    """Workers a dispatch without MSLTRANS_SIM_THREADS would use now (the cores free)."""
    return int(native.runtime().msl_sim_default_workers())


def _parallel_copies() -> bool:
    """Whether the dispatch may use more than one core: MSLTRANS_SIM_THREADS above 1, or
    unset and another core free now (the runtime's estimate, msltrans/sim/runtime/cores.c:
    on a busy machine torch's threads would wait for each other as the dispatch's would)."""
    text = settings.text(settings.SIM_THREADS)
    if not text:
        return default_workers() > 1
    try:
        return int(text) > 1
    except ValueError:
        return False


def copy_bytes(dst: int, src: int, size: int) -> None:
    """memmove between staging and host memory (never overlapping), the large ones on
    torch's threads where the dispatch may use several cores."""
    if size >= PARALLEL_COPY_BYTES and torch is not None and _parallel_copies():
        into = torch.frombuffer((ctypes.c_uint8 * size).from_address(dst), dtype=torch.uint8)
        into.copy_(torch.frombuffer((ctypes.c_uint8 * size).from_address(src),
                                    dtype=torch.uint8))
    else:
        ctypes.memmove(dst, src, size)


def staging_alignment(size: int) -> int:
    """Largest power of two <= 16 dividing size: one element past the end then faults."""
    align = 16
    while align > 1 and size % align:
        align //= 2
    return align


class _Pool:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.free: collections.OrderedDict[int, list[tuple[int, int, int]]] = \
            collections.OrderedDict()
        self.pooled = 0

    def acquire(self, lib: Any, size: int) -> tuple[int, int, int]:
        """(map base, map length, data address) of a mapping for `size` bytes."""
        with self.lock:
            entries = self.free.get(size)
            if entries:
                base, length, data = entries.pop()
                if not entries:
                    del self.free[size]
                self.pooled -= length
                front = data - (base + PAGE)
                tail = base + length - PAGE - (data + size)
                if front:
                    ctypes.memset(base + PAGE, 0, front)
                if tail:
                    ctypes.memset(data + size, 0, tail)
                return base, length, data
        map_base, map_len = ctypes.c_void_p(), ctypes.c_ulong()
        data = lib.msl_sim_map_guarded(size, staging_alignment(size), ctypes.byref(map_base),
                                       ctypes.byref(map_len))
        if not data:
            raise MemoryError(f"cannot map a {size}-byte staging buffer")
        return int(map_base.value or 0), int(map_len.value), int(data)

    def release(self, lib: Any, size: int, base: int, length: int, data: int) -> None:
        with self.lock:
            if length > BUDGET:
                lib.msl_sim_unmap(base, length)
                return
            self.free.setdefault(size, []).append((base, length, data))
            self.free.move_to_end(size)
            self.pooled += length
            while self.pooled > BUDGET:
                old_size, entries = next(iter(self.free.items()))
                old_base, old_len, _ = entries.pop(0)
                if not entries:
                    del self.free[old_size]
                self.pooled -= old_len
                lib.msl_sim_unmap(old_base, old_len)


POOL = _Pool()
