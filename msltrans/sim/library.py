"""The Python face of the simulator, mirroring torch.mps.compile_shader:

    lib = compile_shader(src)
    lib.kernel(*args, threads=N, group_size=G)

`threads` is the TOTAL thread count (dispatchThreads: the last threadgroup may be partial);
argument i binds buffer i.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import threading
from pathlib import Path
from typing import Any

from msltrans.sim import native
from msltrans.sim.args import (
    SLACK_BYTE,
    Bound,
    Region,
    alignment_slack,
    check_slack,
    group_regions,
    memory_of,
    scalar_bytes,
    scalar_region,
    staging_alignment,
)
from msltrans.sim.build import build, deps_changed, load_built
from msltrans.sim.cache import headers_hash, temp_output
from msltrans.sim.compiler import CODEGEN_FLAGS, LANGUAGE_FLAGS, find_compiler
from msltrans.sim.entries import entry_symbol
from msltrans.sim.errors import LaunchError
from msltrans.sim.faults import raise_report
from msltrans.sim.signatures import KernelSignature

MAX_THREADS_PER_THREADGROUP = 1024
THREAD_EXECUTION_WIDTH = 32
# Wall-clock limit of one dispatch (seconds; None disables): a spin-wait would hang forever.
DEFAULT_TIMEOUT_S = 300.0
_dispatch_lock = threading.Lock()   # the runtime keeps one dispatch's state in globals
_loaded: dict[str, Library] = {}
# Library files this process has dlopen'ed: path -> (st_dev, st_ino) of the file opened.
_opened: dict[str, tuple[int, int]] = {}


def _as_dims(value: int | tuple[int, ...] | list[int], what: str) -> tuple[int, ...]:
    dims = (value,) if isinstance(value, int) else tuple(int(v) for v in value)
    if not 1 <= len(dims) <= 3 or any(d <= 0 for d in dims):
        raise LaunchError(f"{what} must be a positive int or a tuple of 1-3 positive ints, "
                          f"got {value!r}")
    return dims


class Kernel:
    """One kernel of a Library; call it like torch.mps's kernel objects."""

    max_threads_per_threadgroup = MAX_THREADS_PER_THREADGROUP
    thread_execution_width = THREAD_EXECUTION_WIDTH

    def __init__(self, library: Library, signature: KernelSignature, entry: int) -> None:
        self.library = library
        self.signature = signature
        self.name = signature.name
        self._entry = entry
        self._static_tg = 0

    @property
    def static_thread_group_memory_length(self) -> int:
        """Bytes of `threadgroup` declarations in the kernel body (16-byte units).

        The declarations are only sized when device code reaches them, so this is what the
        most recent dispatch allocated (0 before the first dispatch)."""
        return self._static_tg

    def __repr__(self) -> str:
        return f"<msltrans.sim kernel {self.name}>"

    def __call__(self, *args: Any, threads: int | tuple[int, ...] | None = None,
                 group_size: int | tuple[int, ...] | None = None,
                 arg_casts: str | dict[int, str] | None = None, schedule: str = "forward",
                 seed: int = 0, threadgroup_memory: dict[int, int] | list[int] | None = None,
                 timeout: float | None = DEFAULT_TIMEOUT_S,
                 buffer_alignment: dict[int, int] | None = None) -> None:
        """`buffer_alignment` ({buffer index: bytes}, an extension): buffers whose staging
        copy must keep the host address's alignment (the kernel was specialised on it)."""
        if schedule not in native.SCHEDULES:
            raise LaunchError(f"schedule must be one of {sorted(native.SCHEDULES)}")
        bound, scalars = self._bind(args, arg_casts)
        for item in bound:
            item.align = int((buffer_alignment or {}).get(item.index, 1))
        if threads is None:
            first = next((a for a in args if memory_of(a, 0) is not None), None)
            if first is None:
                raise LaunchError(f"kernel `{self.name}`: threads= is required when no "
                                  "tensor argument gives a default")
            threads = int(first.size if hasattr(first, "size") and isinstance(first.size, int)
                          else first.numel())
        grid = _as_dims(threads, "threads")
        if group_size is None:
            group = (min(grid[0], MAX_THREADS_PER_THREADGROUP),) + (1,) * (len(grid) - 1)
        else:
            group = _as_dims(group_size, "group_size")
            if len(group) != len(grid):
                raise LaunchError("threads and group_size must have the same length")
        per_group = 1
        for d in group:
            per_group *= d
        if per_group > MAX_THREADS_PER_THREADGROUP:
            raise LaunchError(f"kernel `{self.name}`: group_size {group} is {per_group} "
                              f"threads, over Metal's {MAX_THREADS_PER_THREADGROUP} per "
                              "threadgroup")
        tg_lengths = self._threadgroup_lengths(threadgroup_memory)
        timeout_ms = 0 if not timeout else max(1, int(timeout * 1000))
        self._run(bound, scalars, grid + (1,) * (3 - len(grid)),
                  group + (1,) * (3 - len(group)), tg_lengths, schedule, seed, timeout_ms)

    def _bind(self, args: tuple[Any, ...], arg_casts: str | dict[int, str] | None
              ) -> tuple[list[Bound], list[Bound]]:
        constant = {p.index for p in self.signature.params if p.kind == "buffer" and p.is_constant}
        bound, scalars = [], []
        for index, value in enumerate(args):
            memory = memory_of(value, index)
            if memory is not None:
                addr, size, itemsize, writable = memory
                bound.append(Bound(index, addr, size, itemsize,
                                   writable and index not in constant))
            else:
                data = scalar_bytes(value, index, arg_casts)
                scalars.append(Bound(index, None, len(data), 1, False, scalar=data))
        return bound, scalars

    def _threadgroup_lengths(self, memory: dict[int, int] | list[int] | None) -> list[int]:
        indices = [p.index for p in self.signature.params if p.kind == "threadgroup"]
        if not indices:
            return []
        given = dict(enumerate(memory)) if isinstance(memory, list) else dict(memory or {})
        missing = [i for i in indices if i not in given]
        if missing:
            raise LaunchError(f"kernel `{self.name}`: pass threadgroup_memory={{index: bytes}} "
                              f"for its [[threadgroup(i)]] parameters {missing}")
        return [int(given.get(i, 0)) for i in range(max(indices) + 1)]

    def _run(self, bound: list[Bound], scalars: list[Bound], grid: tuple[int, ...],
             group: tuple[int, ...], tg_lengths: list[int], schedule: str, seed: int,
             timeout_ms: int) -> None:
        lib = native.runtime()
        regions = group_regions(bound)
        for item in scalars:
            regions.append(scalar_region(item))
        wanted = [p.index for p in self.signature.params if p.kind == "buffer"]
        n_buffers = max([*wanted, *(b.index for b in bound + scalars)], default=-1) + 1
        buffers = (ctypes.c_void_p * max(n_buffers, 1))()
        try:
            for region in regions:
                _map(lib, region)
            for item in bound + scalars:
                assert item.region is not None
                item.device_addr = item.region.data + ((item.host_addr or 0)
                                                       - item.region.host_start)
                buffers[item.index] = item.device_addr
            lengths = (ctypes.c_ulong * max(len(tg_lengths), 1))(*tg_lengths)
            launch = native.Launch(
                entry=self._entry, buffers=buffers, n_buffers=n_buffers, n_tg=len(tg_lengths),
                tg_lengths=lengths, threads=(ctypes.c_uint * 3)(*grid),
                group_size=(ctypes.c_uint * 3)(*group), schedule=native.SCHEDULES[schedule],
                interleave=0, seed=seed & (2**64 - 1), timeout_ms=timeout_ms)
            report = native.Report()
            with _dispatch_lock:
                lib.msl_sim_dispatch(ctypes.byref(launch), ctypes.byref(report))
            self._static_tg = int(report.tg_static_bytes)
            for region in regions:
                if region.copy_back:
                    ctypes.memmove(region.host_start, region.data, region.size)
            check_slack(regions, bound)
            if report.kind:
                raise_report(report, self.signature, bound + scalars, str(self.library.path),
                             self.library.sources)
        finally:
            for region in regions:
                if region.map_base.value:
                    lib.msl_sim_unmap(region.map_base, region.map_len)


def _map(lib: ctypes.CDLL, region: Region) -> None:
    region.slack = alignment_slack(region)
    align = 1 if region.slack else staging_alignment(region.size)
    data = lib.msl_sim_map_guarded(region.size + region.slack, align,
                                   ctypes.byref(region.map_base), ctypes.byref(region.map_len))
    if not data:
        raise MemoryError(f"cannot map a {region.size}-byte staging buffer")
    region.data = data
    if region.slack:
        ctypes.memset(data + region.size, SLACK_BYTE, region.slack)
    if region.scalar_bytes is not None:
        ctypes.memmove(data, region.scalar_bytes, region.size)
    elif region.size:
        ctypes.memmove(data, region.host_start, region.size)


class Library:
    """A compiled MSL source; kernels are attributes (lib.vector_add)."""

    def __init__(self, path: Path, kernels: list[KernelSignature], source: str,
                 name: str, deps: dict[str, str] | None = None) -> None:
        native.runtime()   # its symbols must be global before the kernel library loads
        self.path = path
        self.sources = {name: source}
        self.deps = dict(deps or {})
        self._dll = _dlopen(path)
        self._kernels = {}
        for index, signature in enumerate(kernels):
            entry = ctypes.cast(getattr(self._dll, entry_symbol(index)), ctypes.c_void_p).value
            self._kernels[signature.name] = Kernel(self, signature, entry or 0)

    def __getattr__(self, name: str) -> Kernel:
        kernels = self.__dict__.get("_kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"no kernel `{name}` in this library (has: {sorted(kernels)})")

    def __dir__(self) -> list[str]:
        return sorted(self._kernels)

    @property
    def kernel_names(self) -> list[str]:
        return sorted(self._kernels)


def _dlopen(path: Path) -> ctypes.CDLL:
    """dlopen `path`; a file rebuilt under a name this process already opened (an include_dirs
    header changed) goes through a private copy, since dlopen would return the old one."""
    stat = os.stat(path)
    identity = (stat.st_dev, stat.st_ino)
    if _opened.setdefault(str(path), identity) == identity:
        return ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
    copy = temp_output(path)
    try:
        shutil.copyfile(path, copy)
        return ctypes.CDLL(str(copy), mode=ctypes.RTLD_LOCAL)
    finally:
        copy.unlink(missing_ok=True)   # the mapping outlives the name


@functools.lru_cache(maxsize=1)
def _config_hash() -> str:
    compiler = find_compiler()
    text = "\0".join([compiler.identity, headers_hash(), *LANGUAGE_FLAGS, *CODEGEN_FLAGS])
    return hashlib.sha256(text.encode()).hexdigest()


def compile_shader(source: str, name: str = "shader.metal",
                   include_dirs: list[str] | tuple[str, ...] = (),
                   msl_version: int | str | None = None) -> Library:
    """Compile MSL for the CPU simulator (cached in memory and on disk).

    `name` is the file name diagnostics and fault reports show; `include_dirs` are searched
    for `#include "..."`/`<...>` before the shim (their headers' contents are checked when a
    cached build is reused). `msl_version` (310, "3.2", ...; default: msltrans.msl_version.
    target()) sets `__METAL_VERSION__`; the shim offers only that version's features."""
    from msltrans import msl_version as versions

    version = versions.parse(msl_version) if msl_version else versions.target()
    dirs = tuple(str(Path(d).resolve()) for d in include_dirs)
    text = "\0".join([_config_hash(), str(version), name, *dirs, source])
    key = hashlib.sha256(text.encode()).hexdigest()
    cached = _loaded.get(key)
    if cached is not None and not (cached.deps and deps_changed(cached.deps)):
        return cached
    built = load_built(key) or build(source, name, find_compiler(), key, dirs, version)
    library = Library(built.library, built.kernels, source, Path(name).name, built.deps)
    _loaded[key] = library
    return library
