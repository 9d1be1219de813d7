"""The Python face of the simulator, mirroring torch.mps.compile_shader:

    lib = compile_shader(src)
    lib.kernel(*args, threads=N, group_size=G)

`threads` is the TOTAL thread count (dispatchThreads: the last threadgroup may be partial);
argument i binds buffer i; a list of tensors there is an argument buffer of their addresses
(msltrans/sim/args.py).
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

from msltrans import math_mode, settings
from msltrans.abi.limits import MAX_THREADS_PER_THREADGROUP, SIMD_WIDTH
from msltrans.sim import coherence, native, profile_records, profiling
from msltrans.sim.args import (
    SLACK_BYTE,
    Bound,
    Region,
    alignment_slack,
    argument_buffer,
    check_slack,
    group_regions,
    memory_of,
    scalar_bytes,
    scalar_region,
    write_addresses,
)
from msltrans.sim.cache import build_lock, headers_hash, temp_output
from msltrans.sim.compiler import (
    CODEGEN_FLAGS,
    LANGUAGE_FLAGS,
    SYSTEM_LIBS,
    alignment_flags,
    find_compiler,
)
from msltrans.sim.entries import entry_symbol, lanes_frame_symbol, lanes_symbol
from msltrans.sim.errors import LaunchError
from msltrans.sim.faults import raise_report
from msltrans.sim.lanes.plugin import available as lanes_pass
from msltrans.sim.lanes.plugin import lanes_enabled
from msltrans.sim.signatures import KernelSignature
from msltrans.sim.staging import POOL, copy_bytes
from msltrans.sim.store import deps_changed, load_built

# Wall-clock limit of one dispatch (seconds): a spin-wait would hang forever.
# MSLTRANS_SIM_TIMEOUT (seconds, 0 = no limit) changes the default; timeout= overrides both.
DEFAULT_TIMEOUT_S = 300.0
TIMEOUT_ENV = settings.SIM_TIMEOUT
_UNSET: Any = object()
_dispatch_lock = threading.Lock()   # the runtime keeps one dispatch's state in globals
_loaded: dict[str, Library] = {}
# Library files this process has dlopen'ed: path -> (st_dev, st_ino) of the file opened.
_opened: dict[str, tuple[int, int]] = {}


def default_timeout() -> float | None:
    """The dispatch time limit in seconds from MSLTRANS_SIM_TIMEOUT (None: no limit)."""
    text = settings.text(TIMEOUT_ENV)
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise LaunchError(f"{TIMEOUT_ENV} must be a number of seconds >= 0 (0: no limit), "
                          f"not {text!r}")
    return value or None


def _as_dims(value: int | tuple[int, ...] | list[int], what: str) -> tuple[int, ...]:
    dims = (value,) if isinstance(value, int) else tuple(int(v) for v in value)
    if not 1 <= len(dims) <= 3 or any(d <= 0 for d in dims):
        raise LaunchError(f"{what} must be a positive int or a tuple of 1-3 positive ints, "
                          f"got {value!r}")
    return dims


class Kernel:
    """One kernel of a Library; call it like torch.mps's kernel objects."""

    thread_execution_width = SIMD_WIDTH

    def __init__(self, library: Library, signature: KernelSignature, entry: int,
                 lanes: int = 0, lanes_frame_bytes: int | None = None) -> None:
        self.library = library
        self.signature = signature
        self.name = signature.name
        self._entry = entry
        self._lanes = lanes   # the lanes entry (msltrans.sim.lanes), 0 where there is none
        self._lanes_frame_bytes = lanes_frame_bytes
        self._static_tg = 0

    @property
    def max_threads_per_threadgroup(self) -> int:
        """Threads a dispatch may put in one threadgroup: the kernel's
        `[[max_total_threads_per_threadgroup(N)]]` where it has one (Metal's pipeline state
        reports that N), else the device's 1024."""
        return self.signature.max_threads or MAX_THREADS_PER_THREADGROUP

    @property
    def lanes(self) -> bool:
        """Whether the kernel runs a simdgroup at a time (the lanes pass gave it that entry;
        docs/sim-execution.md, "Lanes mode") unless MSLTRANS_SIM_LANES=fibers."""
        return bool(self._lanes)

    @property
    def lanes_frame_bytes(self) -> int | None:
        """Bytes of the stack objects of one simdgroup's 32 lanes in lanes mode (the lanes
        pass's layout: what the lanes keep in memory across their rendezvous), or None where
        the kernel has no lanes entry."""
        return self._lanes_frame_bytes

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
                 timeout: float | None = _UNSET,
                 buffer_alignment: dict[Any, int] | None = None) -> None:
        """Dispatch `threads` threads in groups of `group_size` (torch.mps's convention).

        `timeout`: wall-clock limit in seconds (None or 0: none); the default is
        MSLTRANS_SIM_TIMEOUT, else 300 s. `buffer_alignment` ({buffer index: bytes}, an
        extension): buffers whose staging copy must keep the host address's alignment (the
        kernel was specialised on it); a key (buffer index, i) names the i-th tensor of an
        argument buffer (a list of tensors)."""
        if schedule not in native.SCHEDULES:
            raise LaunchError(f"schedule must be one of {sorted(native.SCHEDULES)}")
        bound, scalars = self._bind(args, arg_casts)
        alignment: dict[Any, int] = buffer_alignment or {}
        for item in bound:
            key = item.index if item.entry is None else (item.index, item.entry)
            item.align = int(alignment.get(key, 1))
        if threads is None:
            first = next((a for a in args if memory_of(a, 0) is not None), None)
            if first is None:
                raise LaunchError(f"kernel `{self.name}`: threads= is required when no "
                                  "tensor argument gives a default")
            threads = int(first.size if hasattr(first, "size") and isinstance(first.size, int)
                          else first.numel())
        grid = _as_dims(threads, "threads")
        if group_size is None:
            group = (min(grid[0], self.max_threads_per_threadgroup),) + (1,) * (len(grid) - 1)
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
        if per_group > self.max_threads_per_threadgroup:
            raise LaunchError(f"kernel `{self.name}`: group_size {group} is {per_group} "
                              "threads, over its [[max_total_threads_per_threadgroup("
                              f"{self.max_threads_per_threadgroup})]]: Metal refuses the "
                              "dispatch")
        groups = 1
        for size, width in zip(grid, group, strict=True):
            groups *= -(-size // width)
        # Pool threads asleep take a while to start: wake them now, while the arguments
        # are staged, rather than at the dispatch (msl_sim_prewake).
        native.runtime().msl_sim_prewake(groups)
        tg_lengths = self._threadgroup_lengths(threadgroup_memory)
        if timeout is _UNSET:
            timeout = default_timeout()
        timeout_ms = 0 if not timeout else max(1, int(timeout * 1000))
        self._run(bound, scalars, grid + (1,) * (3 - len(grid)),
                  group + (1,) * (3 - len(group)), tg_lengths, schedule, seed, timeout_ms)

    def _bind(self, args: tuple[Any, ...], arg_casts: str | dict[int, str] | None
              ) -> tuple[list[Bound], list[Bound]]:
        constant = {p.index for p in self.signature.params if p.kind == "buffer" and p.is_constant}
        bound, scalars = [], []
        for index, value in enumerate(args):
            memory = memory_of(value, index)
            table = None if memory is not None else argument_buffer(value, index)
            if memory is not None:
                addr, size, itemsize, writable = memory
                bound.append(Bound(index, addr, size, itemsize,
                                   writable and index not in constant))
            elif table is not None:
                if not any(p.kind == "buffer" and p.index == index
                           for p in self.signature.params):
                    raise LaunchError(f"kernel `{self.name}`: argument {index} is a list of "
                                      f"tensors (an argument buffer), but the kernel has no "
                                      f"[[buffer({index})]] parameter")
                bound.extend(table[:-1])
                scalars.append(table[-1])
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
        wanted = [p.index for p in self.signature.params if p.kind == "buffer"]
        n_buffers = max([*wanted, *(b.index for b in bound + scalars)], default=-1) + 1
        session = profiling.active()
        entry, target = self._entry, None
        if session is not None and session.wants(self.name):
            target = self.library.profiling_build()._kernels[self.name]
            entry = target._entry
        launch = native.Launch(
            entry=entry, n_buffers=n_buffers, n_tg=len(tg_lengths),
            tg_lengths=(ctypes.c_ulong * max(len(tg_lengths), 1))(*tg_lengths),
            threads=(ctypes.c_uint * 3)(*grid), group_size=(ctypes.c_uint * 3)(*group),
            schedule=native.SCHEDULES[schedule], workers=0, seed=seed & (2**64 - 1),
            timeout_ms=timeout_ms, profile=int(target is not None),
            lanes_entry=self._lanes if target is None and lanes_enabled() else 0)
        retried = False
        while True:
            report = self._dispatch(launch, bound, scalars, n_buffers, session if target else None,
                                    target, checked=self.library.checked and target is None)
            if not (report.kind and report.workers > 1 and report.kind != native.ERR_TIMEOUT
                    and not retried):
                break
            # A parallel dispatch stops at the first error any worker meets. Run it again
            # on one worker, from the host's untouched data, so that the error reported is
            # the one the sequential order meets first (and the results copied back are
            # those of the sequential run up to it).
            launch.workers = 1
            retried = True
        if report.kind:
            raise_report(report, self.signature, bound + scalars, str(self.library.path),
                         self.library.sources, timeout_ms / 1000)

    def _dispatch(self, launch: native.Launch, bound: list[Bound], scalars: list[Bound],
                  n_buffers: int, session: profiling.Profile | None = None,
                  target: Kernel | None = None, checked: bool = False) -> native.Report:
        """Stage the arguments, run, copy results back if the run did not fail (or if it
        ran on one worker), unmap. Returns the runtime's report. With a profile `session`,
        `target` is this kernel in the profiling build and the launch's counts are added;
        `checked`: run the coherence check (a checked build, msltrans/sim/coherence.py)."""
        lib = native.runtime()
        regions = group_regions(bound)
        for item in scalars:
            regions.append(scalar_region(item))
        buffers = (ctypes.c_void_p * max(n_buffers, 1))()
        try:
            for region in regions:
                _map(lib, region)
            for item in bound + scalars:
                assert item.region is not None
                item.device_addr = item.region.data + ((item.host_addr or 0)
                                                       - item.region.host_start)
                if item.entry is None:
                    buffers[item.index] = item.device_addr
            for item in scalars:
                if item.addresses:
                    write_addresses(item, bound)
            launch.buffers = buffers
            keep: tuple[object, ...] = ()
            if checked:
                check, keep = coherence.check_input(self.signature, bound, regions)
                launch.coherence = ctypes.cast(ctypes.byref(check), ctypes.c_void_p)
                keep = (*keep, check)
            counts = None
            if session is not None:
                counts = profile_records.make_out([(r.data, r.size) for r in regions
                                             if r.scalar_bytes is None and r.size])
                launch.profile_out = ctypes.cast(ctypes.byref(counts[0]), ctypes.c_void_p)
            report = native.Report()
            with _dispatch_lock:
                lib.msl_sim_dispatch(ctypes.byref(launch), ctypes.byref(report))
                if counts is not None and session is not None and target is not None:
                    session.launches.append(profile_records.collect(
                        *counts, self.name, target.library, tuple(launch.threads),
                        tuple(launch.group_size)))
            self._static_tg = int(report.tg_static_bytes)
            retry = report.kind and report.workers > 1 and report.kind != native.ERR_TIMEOUT
            if not retry:
                for region in regions:
                    if region.copy_back:
                        copy_bytes(region.host_start, region.data, region.size)
                check_slack(regions, bound)
            return report
        finally:
            for region in regions:
                if region.map_base.value:
                    POOL.release(lib, region.size + region.slack, region.map_base.value,
                                 region.map_len.value, region.data)


def _map(lib: ctypes.CDLL, region: Region) -> None:
    region.slack = alignment_slack(region)
    # With slack, the mapping holds size + slack bytes ending at the guard page; the data
    # then starts at the host address's phase modulo region.align.
    base, length, data = POOL.acquire(lib, region.size + region.slack)
    region.map_base, region.map_len = ctypes.c_void_p(base), ctypes.c_ulong(length)
    region.data = data
    if region.slack:
        ctypes.memset(data + region.size, SLACK_BYTE, region.slack)
    if region.scalar_bytes is not None:
        ctypes.memmove(data, region.scalar_bytes, region.size)
    elif region.size:
        copy_bytes(data, region.host_start, region.size)


class Library:
    """A compiled MSL source; kernels are attributes (lib.vector_add)."""

    def __init__(self, path: Path, kernels: list[KernelSignature], source: str,
                 name: str, deps: dict[str, str] | None = None) -> None:
        native.runtime()   # its symbols must be global before the kernel library loads
        self.path = path
        self.build_args: tuple[str, str, tuple[str, ...], int | None] = (source, name, (), None)
        self.profiling = False
        self.checked = False   # a coherence-checked build (msltrans/sim/coherence.py)
        self.sources = {name: source}
        self.deps = dict(deps or {})
        self._dll = _dlopen(path)
        self._kernels = {}
        for index, signature in enumerate(kernels):
            entry = ctypes.cast(getattr(self._dll, entry_symbol(index)), ctypes.c_void_p).value
            lanes = getattr(self._dll, lanes_symbol(index), None)
            lanes_entry = ctypes.cast(lanes, ctypes.c_void_p).value if lanes is not None else 0
            frame_bytes = None
            if lanes_entry:
                try:
                    frame = ctypes.c_uint64.in_dll(self._dll, lanes_frame_symbol(index))
                    frame_bytes = frame.value
                except ValueError:   # a pass that did not say
                    pass
            self._kernels[signature.name] = Kernel(self, signature, entry or 0, lanes_entry or 0,
                                                   frame_bytes)

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

    def profiling_build(self) -> Library:
        """The same source compiled for msltrans.sim.profile (every access counted)."""
        if self.profiling:
            return self
        source, name, dirs, version = self.build_args
        return compile_shader(source, name, dirs, version, profile=True)


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
    # With the lanes pass or without (LLVM's headers missing): different libraries.
    # The language rules (msltrans/sim/language.py) decide what compiles: a change re-keys.
    rules = hashlib.sha256((Path(__file__).parent / "language.py").read_bytes()).hexdigest()
    text = "\0".join([compiler.identity, headers_hash(), *LANGUAGE_FLAGS, *CODEGEN_FLAGS,
                      *SYSTEM_LIBS, lanes_pass(compiler), rules])
    return hashlib.sha256(text.encode()).hexdigest()


def compile_shader(source: str, name: str = "shader.metal",
                   include_dirs: list[str] | tuple[str, ...] = (),
                   msl_version: int | str | None = None,
                   profile: bool = False) -> Library:
    """Compile MSL for the CPU simulator (cached in memory and on disk).

    `name` is the file name diagnostics and fault reports show; `include_dirs` are searched
    for `#include "..."`/`<...>` before the shim (their headers' contents are checked when a
    cached build is reused). `msl_version` (310, "3.2", ...; default: msltrans.msl_version.
    target()) sets `__METAL_VERSION__`; the shim offers only that version's features.
    `profile`: the instrumented build msltrans.sim.profile uses (made on demand by a profiled
    launch; rarely wanted directly). Sources that synchronise through device atomics or
    fences get the coherence-checked build (msltrans/sim/coherence.py, MSLTRANS_SIM_COHERENCE)."""
    from msltrans import msl_version as versions

    version = versions.parse(msl_version) if msl_version else versions.target()
    if not source.isascii():
        from msltrans.sim.language import check_ascii

        check_ascii(source, Path(name).name)
    dirs = tuple(str(Path(d).resolve()) for d in include_dirs)
    checked = not profile and coherence.wants_check(source)
    parts = [_config_hash(), str(version), name, *dirs, source, "profile" if profile else ""]
    if checked:
        parts.append("coherence-checked")
    # The build checks the source's fp pragmas against torch's fast-math setting
    # (msltrans/sim/fp_pragmas.py): a fast-math process never reuses an unchecked build.
    if math_mode.torch_fast_math():
        parts.append("torch-fast-math")
    parts.extend(alignment_flags())   # the opt-in threadgroup alignment check (compiler.py)
    text = "\0".join(parts)
    key = hashlib.sha256(text.encode()).hexdigest()
    cached = _loaded.get(key)
    if cached is not None and not (cached.deps and deps_changed(cached.deps)):
        return cached
    built = load_built(key)
    if built is None:
        from msltrans.sim.build import build  # the compiler side, only for a cache miss

        # Another process (a pytest-xdist worker) building the same key: wait, then load it.
        with build_lock(key):
            built = load_built(key)
            if built is None:
                built = build(source, name, find_compiler(), key, dirs, version, profile,
                              checked)
    library = Library(built.library, built.kernels, source, Path(name).name, built.deps)
    library.build_args = (source, name, dirs, version)
    library.profiling = profile
    library.checked = checked
    _loaded[key] = library
    return library
