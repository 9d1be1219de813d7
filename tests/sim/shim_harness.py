"""A private harness for the shim tests: compiles MSL with the simulator's clang flags and runs
it on the runtime's C scheduler (msltrans/sim/runtime) through a ctypes mirror of
msl_sim_launch. Kernel entry wrappers come from a deliberately small signature parser
(device/constant/threadgroup pointers and references, scalars, thread-position attributes).

It exists so the metal_stdlib shim can be tested before the Python API
(msltrans.sim.compile_shader) lands; `compile_shader` below prefers the real API."""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "msltrans" / "sim" / "include"
RUNTIME = ROOT / "msltrans" / "sim" / "runtime"
CLANG = os.environ.get("MSLTRANS_CLANG", "clang-19")
FLAGS = [
    "-x",
    "clcpp",
    "-cl-std=clc++2021",
    "-cl-no-stdinc",
    "-Xclang",
    "-cl-ext=-cl_khr_fp64,-__opencl_c_fp64",
    "-ffp-contract=off",
    "-O2",
    "-fPIC",
    "-shared",
    # Apple's compiler predefines these; third-party headers test them before including
    # metal_stdlib (c10/metal/common.h does).
    "-D__METAL__=1",
    "-D__METAL_VERSION__=320",
]
CACHE = Path(tempfile.gettempdir()) / f"msl_shim_tests_{os.getuid()}"


class CompileError(Exception):
    def __init__(self, stderr: str):
        super().__init__(stderr)
        self.stderr = stderr


def clang_compile(source: str, extra: list[str] | None = None, syntax_only: bool = False) -> Path:
    """Compile MSL source to a shared object (cached by content); raise CompileError."""
    CACHE.mkdir(exist_ok=True)
    extra = list(extra or [])
    key = hashlib.sha256((source + "\0".join(extra) + str(syntax_only)).encode()).hexdigest()[:20]
    src = CACHE / f"{key}.metal"
    out = CACHE / f"{key}.so"
    if out.exists() and not syntax_only:
        return out
    src.write_text(source)
    argv = [CLANG, *FLAGS, "-I", str(INCLUDE), *extra, str(src)]
    argv += ["-fsyntax-only"] if syntax_only else ["-o", str(out)]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError(proc.stderr)
    return out


_runtime: ctypes.CDLL | None = None


def runtime() -> ctypes.CDLL:
    global _runtime
    if _runtime is None:
        CACHE.mkdir(exist_ok=True)
        files = sorted(RUNTIME.glob("*.c")) + sorted(RUNTIME.glob("*.S"))
        key = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]
        lib = CACHE / f"libmslsim_{key}.so"
        if not lib.exists():
            subprocess.run(
                [CLANG, "-O2", "-fPIC", "-shared", "-o", str(lib), *map(str, files)],
                check=True,
                capture_output=True,
            )
        _runtime = ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    return _runtime


class Launch(ctypes.Structure):
    _fields_ = [
        ("entry", ctypes.c_void_p),
        ("buffers", ctypes.c_void_p),
        ("n_buffers", ctypes.c_uint),
        ("n_tg", ctypes.c_uint),
        ("tg_lengths", ctypes.c_void_p),
        ("threads", ctypes.c_uint * 3),
        ("group_size", ctypes.c_uint * 3),
        ("schedule", ctypes.c_uint),
        ("interleave", ctypes.c_uint),
        ("seed", ctypes.c_ulonglong),
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
        ("object_path", ctypes.c_char * 512),
        ("message", ctypes.c_char * 2048),
    ]


_BUILTIN = {
    "thread_position_in_grid",
    "threadgroup_position_in_grid",
    "thread_position_in_threadgroup",
    "threads_per_threadgroup",
    "threadgroups_per_grid",
    "threads_per_grid",
    "thread_index_in_threadgroup",
    "simdgroup_index_in_threadgroup",
    "thread_index_in_simdgroup",
    "threads_per_simdgroup",
    "simdgroups_per_threadgroup",
}
_KERNEL = re.compile(r"\bkernel\s+void\s+(\w+)\s*\(([^)]*(?:\([^)]*\)[^)]*)*)\)\s*\{", re.S)


def _strip_comments(s: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", s, flags=re.S)


def _wrapper(name: str, params: str) -> tuple[str, int, int]:
    args, nbuf, ntg = [], 0, 0
    for p in [q.strip() for q in params.split(",") if q.strip()]:
        attr = re.search(r"\[\[\s*(\w+)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]", p)
        decl = re.sub(r"\[\[.*?\]\]", "", p).strip()
        typ = decl.rsplit(None, 1)[0] if not decl.endswith(("*", "&")) else decl
        typ = re.sub(r"\b\w+$", "", decl).strip()
        kind = attr.group(1) if attr else "buffer"
        if kind in _BUILTIN:
            field = f"t->{kind}"
            base = typ.replace("const", "").strip()
            if kind.startswith(
                ("thread_index", "simdgroup_index", "threads_per_simd", "simdgroups_per")
            ):
                args.append(f"({base}){field}")
            elif base.endswith("3"):
                args.append(f"{base}({field}[0], {field}[1], {field}[2])")
            elif base.endswith("2"):
                args.append(f"{base}({field}[0], {field}[1])")
            else:
                args.append(f"({base}){field}[0]")
        elif kind == "threadgroup":
            args.append(f"({typ})(unsigned long)tg[{attr.group(2)}]")
            ntg = max(ntg, int(attr.group(2)) + 1)
        else:
            i = int(attr.group(2)) if attr and attr.group(2) else nbuf
            nbuf = max(nbuf, i + 1)
            if typ.endswith("&"):
                args.append(f"*({typ[:-1].strip()}*)(unsigned long)b[{i}]")
            else:
                args.append(f"({typ})(unsigned long)b[{i}]")
    body = ", ".join(args)
    code = (
        f'\nextern "C" void __entry_{name}(void *const *b, void *const *tg, '
        f"const msl_sim_thread *t) "
        f"{{ (void)b; (void)tg; {name}({body}); }}\n"
    )
    return code, nbuf, ntg


class Kernel:
    def __init__(self, lib: ctypes.CDLL, name: str, nbuf: int, ntg: int):
        self.fn = getattr(lib, f"__entry_{name}")
        self.name, self.nbuf, self.ntg = name, nbuf, ntg

    def __call__(self, *args, threads, group_size, threadgroup=(), schedule=0):
        threads = (
            (threads, 1, 1)
            if isinstance(threads, int)
            else tuple(threads) + (1,) * (3 - len(threads))
        )
        group = (
            (group_size, 1, 1)
            if isinstance(group_size, int)
            else tuple(group_size) + (1,) * (3 - len(group_size))
        )
        keep = []
        for a in args:
            keep.append(a if isinstance(a, np.ndarray) else np.array(a))
        ptrs = (ctypes.c_void_p * max(1, len(keep)))(*[k.ctypes.data for k in keep])
        tgl = (ctypes.c_ulong * max(1, len(threadgroup)))(*threadgroup)
        launch = Launch(
            ctypes.cast(self.fn, ctypes.c_void_p),
            ctypes.cast(ptrs, ctypes.c_void_p),
            len(keep),
            len(threadgroup),
            ctypes.cast(tgl, ctypes.c_void_p),
            (ctypes.c_uint * 3)(*threads),
            (ctypes.c_uint * 3)(*group),
            schedule,
            0,
            0,
        )
        rep = Report()
        rc = runtime().msl_sim_dispatch(ctypes.byref(launch), ctypes.byref(rep))
        if rc != 0 or rep.kind != 0:
            raise RuntimeError(
                f"dispatch failed ({rep.kind}): {rep.message.decode(errors='replace')}"
            )


class Library:
    def __init__(self, source: str, extra: list[str] | None = None):
        clean = _strip_comments(source)
        wrappers, meta = [], {}
        for m in _KERNEL.finditer(clean):
            code, nbuf, ntg = _wrapper(m.group(1), m.group(2))
            wrappers.append(code)
            meta[m.group(1)] = (nbuf, ntg)
        runtime()
        self.lib = ctypes.CDLL(str(clang_compile(source + "".join(wrappers), extra)))
        self.kernels = {n: Kernel(self.lib, n, *v) for n, v in meta.items()}

    def __getattr__(self, name: str) -> Kernel:
        try:
            return self.__dict__["kernels"][name]
        except KeyError:
            raise AttributeError(name) from None


class _RealKernel:
    """Adapts the harness's call convention (threadgroup=[bytes...]) to the real API."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __call__(self, *args, threads, group_size, threadgroup=(), schedule=0):
        memory = list(threadgroup) if threadgroup else None
        try:
            self.kernel(*args, threads=threads, group_size=group_size, threadgroup_memory=memory)
        except Exception as e:  # the real API raises SimError subclasses
            if type(e).__module__.startswith("msltrans.sim"):
                raise RuntimeError(str(e)) from e
            raise


class _RealLibrary:
    def __init__(self, lib):
        self.lib = lib

    def __getattr__(self, name: str) -> _RealKernel:
        return _RealKernel(getattr(self.lib, name))


def _real_compile_shader():
    """msltrans.sim.compile_shader, unless MSL_SHIM_PRIVATE_HARNESS=1 asks for the private one."""
    if os.environ.get("MSL_SHIM_PRIVATE_HARNESS") == "1":
        return None
    try:
        import msltrans.sim as sim
    except Exception:
        return None
    return getattr(sim, "compile_shader", None)


def compile_shader(source: str, include_dirs: list[str] | None = None):
    """Compile through the real API when it exists (and supports what the call needs)."""
    real = _real_compile_shader()
    if real is not None:
        import inspect

        params = inspect.signature(real).parameters
        if not include_dirs:
            return _RealLibrary(real(source))
        if "include_dirs" in params:
            return _RealLibrary(real(source, include_dirs=include_dirs))
    return Library(source, [f"-I{d}" for d in include_dirs or []])
