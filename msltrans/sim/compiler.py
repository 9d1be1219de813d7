"""Finding a clang that can compile MSL as C++ for OpenCL, and the flags the simulator uses.

Order: $MSLTRANS_CLANG, then a system clang >= 17 (clang-19, clang-18, clang-17, clang), then
the clang inside the `ziglang` PyPI package. Debian's clang 14 lacks `_Float16` arithmetic on
x86, so older versions are skipped.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from msltrans import settings
from msltrans.sim.errors import CompilerNotFoundError

MIN_CLANG_MAJOR = 17
INCLUDE_DIR = Path(__file__).parent / "include"

# C++ for OpenCL gives `device`/`threadgroup`/`constant` real address spaces with
# Metal-like type errors. The fp64 extensions must be switched off through -Xclang: the
# driver silently ignores a plain -cl-ext=. Contraction is off so only an explicit fma()
# fuses (bit-exactness of multiply-add loops depends on it).
LANGUAGE_FLAGS = (
    "-x", "clcpp", "-cl-std=clc++2021", "-cl-no-stdinc",
    "-Xclang", "-cl-ext=-cl_khr_fp64,-__opencl_c_fp64",
    "-ffp-contract=off",
    "-Xclang", "-ffloat16-excess-precision=none",
    "-Xclang", "-fbfloat16-excess-precision=none",
    "-Wno-unknown-attributes", "-Wno-ignored-attributes",
    # Apple's compiler predefines __METAL__ and __METAL_VERSION__ (language_flags adds the
    # version); third-party headers test them before including metal_stdlib (c10/metal does).
    "-D__METAL__=1",
)


def _host_target_flags() -> tuple[str, ...]:
    """`-march=x86-64-v3` where this CPU has AVX2, FMA and F16C: `fma()` is then one
    instruction (not a libm call), half conversions are F16C's, and element loops
    vectorise. Results do not change (contraction stays off; the same IEEE operations run).
    MSLTRANS_SIM_MARCH overrides: a -march value, or `none` for the compiler's default."""
    override = settings.text(settings.SIM_MARCH)
    if override:
        return () if override == "none" else (f"-march={override}",)
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        return ()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
            else:
                return ()
    except OSError:
        return ()
    needed = {"avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "movbe", "sse4_2", "popcnt"}
    if needed <= flags and ({"abm", "lzcnt"} & flags):
        return ("-march=x86-64-v3",)
    return ()


TARGET_FLAGS = _host_target_flags()
# Typed accesses to threadgroup memory can check their address's alignment (clang's UBSan
# alignment check, front end; language.py keep_threadgroup_alignment_checks drops the
# others); the runtime's __ubsan_handle_type_mismatch_v1 then fails the dispatch for a
# misaligned threadgroup access (rendezvous.c). Off unless MSLTRANS_SIM_ALIGNMENT_CHECK=1:
# attention's threadgroup tile loop ran 1.2-1.7x longer with it, and it changes how bf16
# values move through registers (a signalling NaN copied through threadgroup scratch came
# back quieted: tests/e2e/test_cat.py's bf16 case), so results are only trusted without it.
# Part of the cache key.
ALIGNMENT_CHECK_ENV = settings.SIM_ALIGNMENT_CHECK


def alignment_flags() -> tuple[str, ...]:
    """The alignment check's flags where MSLTRANS_SIM_ALIGNMENT_CHECK=1 asks for it."""
    on = settings.text(ALIGNMENT_CHECK_ENV) == "1"
    return ("-fsanitize=alignment",) if on else ()


def language_flags(version: int) -> tuple[str, ...]:
    """LANGUAGE_FLAGS for one MSL version (msltrans/msl_version.py): the shim headers offer
    only what the specification gives that version."""
    from msltrans import msl_version

    return (*LANGUAGE_FLAGS, msl_version.define(msl_version.parse(version)))
# -nostdlib: the driver's default link (crt files, libc) costs ~40 ms per kernel library;
# libc symbols (memcpy) resolve at load time in the Python process, and compiler helpers
# (half conversions) come from libgcc.a, linked in explicitly (Compiler.link_flags).
# -fno-plt: calls into libmslsim (loaded first, its symbols global) go through the GOT,
# bound when the library loads, not through a PLT stub at every rendezvous and matrix op.
# A kernel library links the math library by path: its references to libm (exp2f, logf, ...)
# then carry the library's default symbol versions. Unversioned, the dynamic linker binds them
# to the oldest version, glibc's error-handling wrappers (exp2f@GLIBC_2.2.5), which cost ~6 %
# of attention's time and give the same values (docs/dev-notes/sim-lanes.md, "Packed products").
# Part of the cache key (library._config_hash).
SYSTEM_LIBS = ("libm.so.6",)
# -disable-cgp-ext-ld-promotion: CodeGenPrepare's moving of sign/zero extensions up to the
# loads they extend tries each memory access's address against every use of the values in
# it (a replace-all-uses and its undo per try), quadratic in straight-line kernels whose
# thousands of accesses share an index (a 64x64x128 fp16 tl.dot's per-thread function:
# 7.9 s of CPU in llc with it, 1.2 s without). Code generation only: the same IR semantics.
# -cgpp-huge-func=0: CodeGenPrepare in its mode for huge functions everywhere (after a change
# it optimises again only the blocks the change made, instead of sweeping the function until
# nothing changes): each sweep asks, for every memory access, whether the values of its
# address are used in its block, which scans the block or the value's uses; a lanes function
# of the tutorial's attention forward (128x64 blocks, 4 warps) spent 29 s of CPU there, 0.9 s
# in this mode, for an object of the same size (the per-thread function: 1.9 -> 2.2 s).
# -experimental-debug-variable-locations=false: the line tables (-gline-tables-only, for
# fault reports) carry no variables, but x86-64's default variable-location tracking
# (instruction referencing) still runs its register and stack-slot dataflow over every block
# of every function: 2.6 s of the 12.7 s of CPU code generation of attention backward
# (tests/e2e/workloads/test_attention.py) took, 0.1 s with the other tracker; the machine
# code (.text) is byte for byte the same.
CODEGEN_FLAGS = ("-O2", *TARGET_FLAGS, "-fPIC", "-fno-plt", "-shared", "-nostdlib",
                 "-gline-tables-only", "-fno-omit-frame-pointer", "-fstack-clash-protection",
                 "-mllvm", "-disable-cgp-ext-ld-promotion", "-mllvm", "-cgpp-huge-func=0",
                 "-mllvm", "-experimental-debug-variable-locations=false")


@dataclass(frozen=True)
class Compiler:
    """A clang driver command (argv prefix) and its identity for cache keys."""

    argv: tuple[str, ...]
    version: str
    major: int

    @property
    def identity(self) -> str:
        return hashlib.sha256(("\0".join(self.argv) + "\0" + self.version).encode()).hexdigest()

    @functools.cached_property
    def link_flags(self) -> tuple[str, ...]:
        """Compiler support library (libgcc.a / compiler-rt builtins), if the driver has one,
        and the C math library (SYSTEM_LIBS)."""
        found = [self._print("-print-libgcc-file-name")]
        found += [self._print(f"-print-file-name={lib}") for lib in SYSTEM_LIBS]
        return tuple(out for out in found if out and os.path.isabs(out) and Path(out).exists())

    @functools.cached_property
    def linker(self) -> tuple[str, ...] | None:
        """The linker command this driver runs to make a `-shared -nostdlib` library of one
        object and `link_flags` (its `-###` answer), with OUTPUT and INPUT standing for the
        two paths; None where the answer is not one such command. Run directly after a `-c`
        compile, it makes the same library ~25 ms sooner than the driver's own link step."""
        with tempfile.TemporaryDirectory(prefix="msltrans-link-") as tmp:
            output, obj = os.path.join(tmp, "out.so"), os.path.join(tmp, "in.o")
            Path(obj).write_bytes(b"")
            try:
                answer = subprocess.run([*self.argv, "-###", "-shared", "-nostdlib", "-o",
                                         output, obj, *self.link_flags], capture_output=True,
                                        text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                return None
        lines = [ln for ln in answer.stderr.splitlines() if output in ln]
        if answer.returncode != 0 or len(lines) != 1:
            return None
        words = shlex.split(lines[0])
        if words.count(output) != 1 or words.count(obj) != 1:
            return None
        return tuple({output: "OUTPUT", obj: "INPUT"}.get(w, w) for w in words)

    def link_command(self, output: str, objects: list[str]) -> list[str]:
        """The command that links `objects` into the shared library `output`: the driver's
        own linker command (`linker`) where it is known, else the driver."""
        if self.linker is None:
            return [*self.argv, "-shared", "-nostdlib", "-o", output, *objects,
                    *self.link_flags]
        return [arg for word in self.linker
                for arg in ([output] if word == "OUTPUT" else objects if word == "INPUT"
                            else [word])]

    def _print(self, option: str) -> str:
        try:
            return subprocess.run([*self.argv, option], capture_output=True, text=True,
                                  timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""

    def c_argv(self) -> list[str]:
        """The same driver, for compiling the C runtime."""
        return list(self.argv)

    def llvm_tool(self, name: str) -> str | None:
        """An LLVM tool (`opt`, `llvm-extract`) of the install this clang driver belongs to
        (`name` or `name-<major>` beside the driver's real path), if there is one."""
        return _llvm_tool(self.argv, self.major, name)


@functools.lru_cache(maxsize=16)
def _llvm_tool(argv: tuple[str, ...], major: int, name: str) -> str | None:
    if len(argv) != 1:
        return None
    real = Path(os.path.realpath(argv[0]))
    for candidate in (real.with_name(name), real.with_name(f"{name}-{major}")):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _binary_key(argv: tuple[str, ...]) -> str | None:
    """Identity of a one-word clang command's binary (its real path, size and mtime), so its
    `--version` answer can be remembered across processes; None for other commands."""
    if len(argv) != 1:
        return None
    try:
        real = os.path.realpath(argv[0])
        st = os.stat(real)
    except OSError:
        return None
    return f"{argv[0]}\0{real}\0{st.st_size}\0{st.st_mtime_ns}"


def _memo_path() -> Path:
    from msltrans.sim.cache import cache_dir

    return cache_dir() / "compilers.json"


def _version_of(argv: tuple[str, ...]) -> tuple[str, int] | None:
    """(first line of `--version`, major) or None. Running `clang --version` costs ~35 ms, so
    a fresh process's first cached kernel load would miss its 5 ms budget: the answer is kept
    on disk, keyed by the binary's identity (an upgraded clang has another size/mtime)."""
    key = _binary_key(argv)
    memo: dict[str, list] = {}
    if key is not None:
        try:
            memo = json.loads(_memo_path().read_text(encoding="utf-8"))
            if key in memo:
                line, major = memo[key]
                return str(line), int(major)
        except (OSError, ValueError, TypeError):
            memo = {}
    try:
        out = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"clang version (\d+)\.\d+", out.stdout)
    if out.returncode != 0 or not match:
        return None
    info = out.stdout.splitlines()[0].strip(), int(match.group(1))
    if key is not None:
        memo[key] = list(info)
        try:
            path = _memo_path()
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(memo), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache dir only costs the ~35 ms again
    return info


def _candidates() -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for name in ("clang-19", "clang-18", "clang-17", "clang"):
        path = shutil.which(name)
        if path:
            found.append((path,))
    try:
        import ziglang  # noqa: F401  (only its presence matters)

        found.append((sys.executable, "-m", "ziglang", "clang"))
    except ImportError:
        pass
    return found


@functools.cache
def _find(override: str | None) -> Compiler:
    if override:
        argv = tuple(override.split())
        info = _version_of(argv)
        if info is None:
            raise CompilerNotFoundError(f"MSLTRANS_CLANG={override!r} is not a working clang")
        return Compiler(argv, *info)
    rejected = []
    for argv in _candidates():
        info = _version_of(argv)
        if info and info[1] >= MIN_CLANG_MAJOR:
            return Compiler(argv, *info)
        rejected.append(f"{' '.join(argv)} ({info[0] if info else 'not runnable'})")
    raise CompilerNotFoundError(
        f"the Metal simulator needs clang >= {MIN_CLANG_MAJOR}"
        + (f" (found only: {', '.join(rejected)})" if rejected else "")
        + ": `apt-get install clang-19`, or `pip install msltrans[zig]` (the ziglang "
        "package bundles one), or point MSLTRANS_CLANG at one")


def find_compiler() -> Compiler:
    """The clang the simulator compiles with (memoised per process)."""
    return _find(settings.raw(settings.CLANG) or None)


def include_flags() -> list[str]:
    return ["-I", str(INCLUDE_DIR)]


def shell_command(argv: list[str]) -> str:
    """A copy-pasteable command line, for the 'reproduce with' part of errors."""
    import shlex

    return " ".join(shlex.quote(a) for a in argv)
