"""libmslsim: the C runtime, built once per compiler into the cache and loaded with
RTLD_GLOBAL so kernel libraries (linked with its symbols undefined) resolve against it."""

from __future__ import annotations

import ctypes
import functools
import os
import subprocess

from msltrans.sim.cache import build_lock, cache_dir, runtime_sources, temp_output, tree_hash
from msltrans.sim.compiler import TARGET_FLAGS, find_compiler, shell_command
from msltrans.sim.errors import CompileError

ABI_VERSION = 10


class Launch(ctypes.Structure):
    _fields_ = [
        ("entry", ctypes.c_void_p),
        ("buffers", ctypes.POINTER(ctypes.c_void_p)),
        ("n_buffers", ctypes.c_uint),
        ("n_tg", ctypes.c_uint),
        ("tg_lengths", ctypes.POINTER(ctypes.c_ulong)),
        ("threads", ctypes.c_uint * 3),
        ("group_size", ctypes.c_uint * 3),
        ("schedule", ctypes.c_uint),
        ("workers", ctypes.c_uint),
        ("seed", ctypes.c_ulonglong),
        ("timeout_ms", ctypes.c_uint),
        ("profile", ctypes.c_uint),
        ("profile_out", ctypes.c_void_p),
        ("lanes_entry", ctypes.c_void_p),
        ("coherence", ctypes.c_void_p),
    ]


class CoherenceRange(ctypes.Structure):
    _fields_ = [("start", ctypes.c_ulonglong), ("size", ctypes.c_ulonglong)]


class CoherenceIn(ctypes.Structure):
    """The coherence check's input (runtime/coherence.c): the dispatch's staging regions and
    the address ranges of its coherent(device) buffers."""

    _fields_ = [
        ("regions", ctypes.POINTER(CoherenceRange)),
        ("n_regions", ctypes.c_uint),
        ("n_coherent", ctypes.c_uint),
        ("coherent", ctypes.POINTER(CoherenceRange)),
    ]


class Report(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int),
        ("is_write", ctypes.c_int),
        ("signo", ctypes.c_int),
        ("group", ctypes.c_uint * 3),
        ("local", ctypes.c_uint * 3),
        ("local_index", ctypes.c_uint),
        ("fault_addr", ctypes.c_ulonglong),
        ("pc", ctypes.c_ulonglong),
        ("pc_offset", ctypes.c_ulonglong),
        ("tg_static_bytes", ctypes.c_ulong),
        ("groups_run", ctypes.c_ulonglong),
        ("workers", ctypes.c_uint),
        ("object_path", ctypes.c_char * 512),
        ("message", ctypes.c_char * 2048),
        ("writer_group", ctypes.c_uint * 3),
        ("writer_local", ctypes.c_uint * 3),
        ("writer_atomic", ctypes.c_uint),
        ("writer_pc_offset", ctypes.c_ulonglong),
    ]


(ERR_SEGV, ERR_STACK, ERR_FPE, ERR_DIVERGENCE, ERR_TG_MEMORY, ERR_FAIL, ERR_LAUNCH, ERR_BUS,
 ERR_TIMEOUT, ERR_COHERENCE) = range(1, 11)
SCHEDULES = {"forward": 0, "reverse": 1, "shuffle": 2}


def _build(path: os.PathLike[str]) -> None:
    compiler = find_compiler()
    sources = [str(p) for p in runtime_sources() if p.suffix in (".c", ".S")]
    tmp = temp_output(cache_dir() / os.path.basename(path))
    argv = [*compiler.c_argv(), "-O2", *TARGET_FLAGS, "-fPIC", "-shared", "-g", "-U_FORTIFY_SOURCE",
            "-fno-stack-protector", "-pthread", "-o", str(tmp), *sources]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise CompileError("building the simulator runtime failed", result.stderr,
                           shell_command(argv))
    os.replace(tmp, path)


@functools.lru_cache(maxsize=1)
def runtime() -> ctypes.CDLL:
    """Build (once per compiler and runtime version) and load libmslsim."""
    compiler = find_compiler()
    abi = runtime_sources()[0].parent.parent / "include" / "msl_sim" / "abi.h"
    key = (tree_hash([*runtime_sources(), abi])[:16] + "-" + compiler.identity[:12]
           + "".join(f"-{f.split('=')[-1]}" for f in TARGET_FLAGS))
    path = cache_dir() / f"libmslsim-{key}.so"
    if not path.exists():
        with build_lock(path.name):
            if not path.exists():
                _build(path)
    lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    lib.msl_sim_dispatch.argtypes = [ctypes.POINTER(Launch), ctypes.POINTER(Report)]
    lib.msl_sim_dispatch.restype = ctypes.c_int
    lib.msl_sim_map_guarded.argtypes = [ctypes.c_ulong, ctypes.c_ulong,
                                        ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.POINTER(ctypes.c_ulong)]
    lib.msl_sim_map_guarded.restype = ctypes.c_void_p
    lib.msl_sim_unmap.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
    lib.msl_sim_unmap.restype = None
    lib.msl_sim_prewake.argtypes = [ctypes.c_ulonglong]
    lib.msl_sim_prewake.restype = None
    lib.msl_sim_prewake_spin_ns.restype = ctypes.c_ulonglong
    if lib.msl_sim_abi_version() != ABI_VERSION:
        raise CompileError(f"libmslsim ABI {lib.msl_sim_abi_version()} != {ABI_VERSION}")
    return lib
