"""The lanes pass (lanes_pass.cpp): an LLVM pass plugin for the simulator's clang, built
once per compiler into the compile cache.

It needs the C++ headers of the LLVM that clang belongs to (Debian: llvm-19-dev, found
through the `llvm-config` next to clang's real binary). Without them kernels are compiled
without their lanes entry and run on fibers, one per thread, as before: the same results,
slower where SIMD-group rendezvous dominate.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import warnings
from pathlib import Path

from msltrans import settings
from msltrans.sim.cache import atomic_write, build_lock, cache_dir, temp_output, tree_hash
from msltrans.sim.compiler import Compiler, shell_command

SOURCE = Path(__file__).with_name("lanes_pass.cpp")
# The pass's other parts: compiled with SOURCE (the .cpp files) and part of its identity.
PARTS = tuple(Path(__file__).with_name(name)
              for name in ("matrix.cpp", "objects.cpp", "reach.cpp", "live.cpp", "pass.h"))


def _llvm_config(compiler: Compiler) -> str | None:
    if len(compiler.argv) != 1:
        return None
    found = shutil.which(compiler.argv[0])
    if not found:
        return None
    beside = Path(os.path.realpath(found)).with_name("llvm-config")
    if beside.is_file():
        return str(beside)
    return shutil.which(f"llvm-config-{compiler.major}")


def _cxx_flags(llvm_config: str) -> list[str] | None:
    try:
        out = subprocess.run([llvm_config, "--cxxflags"], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    flags = out.stdout.split()
    include = next((f[2:] for f in flags if f.startswith("-I")), None)
    if not include or not Path(include, "llvm", "Passes", "PassPlugin.h").is_file():
        return None
    return flags


def _key(compiler: Compiler) -> str:
    return tree_hash([SOURCE, *PARTS])[:16] + "-" + compiler.identity[:12]


@functools.lru_cache(maxsize=4)
def _headers(compiler: Compiler) -> tuple[str, ...] | None:
    """clang++ flags for LLVM's headers, None where they are missing."""
    llvm_config = _llvm_config(compiler)
    flags = _cxx_flags(llvm_config) if llvm_config else None
    return tuple(flags) if flags is not None else None


def available(compiler: Compiler) -> str:
    """The pass's identity for cache keys ("" where it cannot be built): kernel libraries
    compiled with it differ from those compiled without."""
    return _key(compiler) if plugin(compiler) is not None else ""


_failed: set[str] = set()


def plugin(compiler: Compiler) -> Path | None:
    """The built plugin for `compiler` (built now if needed), or None where LLVM's headers
    are missing or the build failed (then a warning says why, once per process; kernels
    run on fibers: the same results, slower on SIMD-heavy kernels)."""
    key = _key(compiler)
    path = cache_dir() / f"lanes-{key}.so"
    if path.exists():
        return path
    flags = _headers(compiler)
    if flags is None or key in _failed:
        return None
    with build_lock(path.name):
        return path if path.exists() else _build(compiler, flags, key, path)


def _build(compiler: Compiler, flags: tuple[str, ...], key: str, path: Path) -> Path | None:
    # One translation unit that includes every part: LLVM's headers are parsed once, not
    # once per file (6.5 s of CPU where five units took 14.5 s).
    units = [SOURCE, *(part for part in PARTS if part.suffix == ".cpp")]
    unity = path.with_suffix(".cpp")
    atomic_write(unity, "".join(f'#include "{unit}"\n' for unit in units).encode())
    tmp = temp_output(path)
    argv = [*compiler.argv, "-x", "c++", *flags, "-O2", "-fPIC", "-shared", "-Wfatal-errors",
            "-o", str(tmp), str(unity)]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        tmp.unlink(missing_ok=True)
        _failed.add(key)
        warnings.warn("msltrans.sim: building the lanes pass failed, so kernels run one fiber "
                      f"per thread (slower, same results): {shell_command(argv)}\n"
                      + result.stderr[-2000:], RuntimeWarning, stacklevel=2)
        return None
    os.replace(tmp, path)
    return path


def lanes_flags(compiler: Compiler) -> tuple[str, ...]:
    """clang flags that run the lanes pass (none without the plugin)."""
    path = plugin(compiler)
    return (f"-fpass-plugin={path}",) if path else ()


def lanes_enabled() -> bool:
    """Whether dispatches use a kernel's lanes entry where it has one: MSLTRANS_SIM_LANES
    unset or `lanes` (also on/1); `fibers` (also off/0) runs every thread on its own fiber."""
    value = settings.text(settings.SIM_LANES).lower()
    if value in ("", "lanes", "on", "1"):
        return True
    if value in ("fibers", "off", "0"):
        return False
    raise ValueError(f"MSLTRANS_SIM_LANES={value!r}: use `lanes` (the default) or `fibers`")
