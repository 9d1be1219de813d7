"""The cross-threadgroup coherence check (MSL §4.8 Memory Coherency).

Device memory is coherent only within a threadgroup unless a buffer is declared
`coherent(device)` (Metal 3.2): during one dispatch, a plain load of bytes another threadgroup
stored may return a stale value, whatever fences and atomics synchronised the two. The
simulator's memory is coherent, so a *checked* build of a kernel library reports such a load
as a CoherenceError (runtime/coherence.c keeps a shadow word per device byte: which thread
stored it last during the dispatch, and whether with an atomic).

Which libraries are checked (MSLTRANS_SIM_COHERENCE):
- `auto` (default): those whose source uses device atomics (`device atomic_*` or
  `device atomic<...>`) or `atomic_thread_fence`. A kernel can only communicate between
  threadgroups of one dispatch by synchronising through device atomics or device fences
  (a barrier reaches one threadgroup), so the others cannot break the rule in a way that
  works on a GPU; they keep the fast build.
- `1` / `on`: every library. `0` / `off`: none.

A checked build is the profiling build's instrumentation (every load and store calls the
runtime) plus uninstrumented device atomics that report their writes; it runs on fibers (no
lanes entry) and is compiled without the precompiled prelude.
"""

from __future__ import annotations

import ctypes
import re

from msltrans import settings
from msltrans.sim import native
from msltrans.sim.args import Bound, Region
from msltrans.sim.errors import LaunchError
from msltrans.sim.signatures import KernelSignature

ENV = settings.SIM_COHERENCE
# Compile flag of a checked build: the shim's device atomics stay uninstrumented and report
# their writes (include/msl_sim/atomic.h).
DEFINE = "-DMSL_SIM_COHERENCE=1"

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_SYNC = re.compile(
    r"\bdevice\s+(?:(?:const|volatile)\s+)*(?:metal::)?(?:atomic_(?:int|uint|float|bool|ulong)\b"
    r"|atomic\s*<)|\batomic_thread_fence\b")


def mode() -> str:
    """'auto', 'on' or 'off' from MSLTRANS_SIM_COHERENCE."""
    text = settings.text(ENV).lower()
    if text in ("", "auto"):
        return "auto"
    if text in ("1", "on", "true", "yes"):
        return "on"
    if text in ("0", "off", "false", "no"):
        return "off"
    raise LaunchError(f"{ENV} must be auto, 1/on or 0/off, not {text!r}")


def synchronises_across_groups(source: str) -> bool:
    """Whether `source` uses device atomics or device fences (comments aside)."""
    return _SYNC.search(_COMMENTS.sub(" ", source)) is not None


def wants_check(source: str) -> bool:
    """Whether a library compiled from `source` gets the checked build (see the docstring)."""
    chosen = mode()
    return chosen == "on" or (chosen == "auto" and synchronises_across_groups(source))


def check_input(signature: KernelSignature, bound: list[Bound], regions: list[Region]
                ) -> tuple[native.CoherenceIn, tuple[object, ...]]:
    """The runtime's input for one dispatch (after the regions are mapped), and the ctypes
    arrays it points into (keep them alive for the dispatch)."""
    coherent = {p.index for p in signature.params if p.kind == "buffer" and p.is_coherent}
    memory = [r for r in regions if r.scalar_bytes is None and r.size]
    spans = [(item.device_addr, item.size) for item in bound
             if item.index in coherent and item.entry is None and item.host_addr is not None
             and item.size]
    region_array = (native.CoherenceRange * max(len(memory), 1))(
        *[native.CoherenceRange(r.data, r.size) for r in memory])
    coherent_array = (native.CoherenceRange * max(len(spans), 1))(
        *[native.CoherenceRange(start, size) for start, size in spans])
    check = native.CoherenceIn(
        ctypes.cast(region_array, ctypes.POINTER(native.CoherenceRange)), len(memory),
        len(spans), ctypes.cast(coherent_array, ctypes.POINTER(native.CoherenceRange)))
    return check, (region_array, coherent_array)
