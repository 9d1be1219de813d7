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
import functools
import mmap
import threading
from typing import Any

from msltrans.sim import native

BUDGET = 256 << 20
PAGE = mmap.PAGESIZE
# Copies into and out of staging of at least this many bytes run on the dispatch's workers
# (a 1M float vector add moves 24 MB per dispatch: one thread spent longer copying than
# running): msl_sim_copy uses as many as a dispatch would now, so a busy machine copies on
# the calling thread alone.
PARALLEL_COPY_BYTES = 1 << 20


@functools.lru_cache(maxsize=1)
def _copier() -> Any:
    copy = native.runtime().msl_sim_copy
    copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulong]
    copy.restype = None
    return copy


def copy_bytes(dst: int, src: int, size: int) -> None:
    """memmove between staging and host memory (never overlapping), the large ones on the
    simulator's workers."""
    if size >= PARALLEL_COPY_BYTES:
        _copier()(dst, src, size)
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
