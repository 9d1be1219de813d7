"""A precompiled header of the shim, so each kernel compile skips parsing ~86 KB of headers
(measured: 0.20 s -> 0.12 s per compile).

The kernel is still preprocessed in full (the rewrites need the expanded text); the compile
then drops the shim's part of that text and loads the PCH instead — but only when that part
is exactly what the PCH was built from (the user included the shim once, unconditioned by
their own macros). Anything else compiles the full text, as before.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
from pathlib import Path

from msltrans.sim.cache import atomic_write, build_lock, cache_dir, headers_hash, temp_output
from msltrans.sim.compiler import TARGET_FLAGS, Compiler, include_flags, language_flags

PRELUDE = "#include <msl_sim/entry.h>\n#include <metal_stdlib>\n"
# Flags that change predefined macros must match between the PCH and its users.
PCH_CODEGEN = ("-O2", *TARGET_FLAGS, "-fPIC")
# The cache key already covers the headers' contents; mtime checks would only reject a PCH
# after a header was touched without changes.
USE_PCH = ("-Xclang", "-fno-validate-pch", "-include-pch")
_MARKER = re.compile(r'^#\s*(\d+)\s+"((?:\\.|[^"\\])*)"[^\n]*$')


def split_shim(text: str, shim_dir: str) -> tuple[str, str]:
    """(shim lines, everything else) of a preprocessed text; markers of kept parts lose
    their include-stack flags, which would refer to dropped files."""
    shim: list[str] = []
    rest: list[str] = []
    keep = True
    for line in text.split("\n"):
        marker = _MARKER.match(line)
        if marker:
            name = marker.group(2)
            keep = not (name.startswith("<") or name.startswith(shim_dir))
            if keep:
                rest.append(f'# {marker.group(1)} "{name}"')
            else:
                rest.append("")
            continue
        (rest if keep else shim).append(line if keep else line.rstrip())
    return "\n".join(shim), "\n".join(rest)


@functools.lru_cache(maxsize=8)
def prelude_pch(compiler: Compiler, version: int) -> tuple[Path, str] | None:
    """(pch path, the shim text it holds), built once per compiler, header version and MSL
    version."""
    flags = language_flags(version)
    shim_dir = str(include_flags()[1])
    # The PCH records the paths of the headers it read (and their mtimes): two checkouts
    # with equal headers must not share one, or an edit in one breaks the other's builds.
    key = hashlib.sha256("\0".join([compiler.identity, headers_hash(), shim_dir, *flags,
                                    *PCH_CODEGEN]).encode()).hexdigest()[:24]
    out = cache_dir()
    pch, reference = out / f"prelude-{key}.pch", out / f"prelude-{key}.shim"
    if pch.exists() and reference.exists():
        return pch, reference.read_text()
    with build_lock(pch.name):
        if pch.exists() and reference.exists():
            return pch, reference.read_text()
        return _build(compiler, flags, key, pch, reference)


def _build(compiler: Compiler, flags: tuple[str, ...], key: str, pch: Path,
           reference: Path) -> tuple[Path, str] | None:
    shim_dir = str(include_flags()[1])
    out = pch.parent
    # The PCH records its input's path: the prelude lives next to it in the cache.
    header = out / f"prelude-{key}.h"
    if not header.exists():
        atomic_write(header, PRELUDE.encode())
    base = [*compiler.argv, *flags, *PCH_CODEGEN, *include_flags()]
    pre = subprocess.run([*base, "-E", str(header)], capture_output=True, text=True)
    tmp = temp_output(pch)
    built = subprocess.run([*base, "-c", "-Xclang", "-emit-pch", "-o", str(tmp), str(header)],
                           capture_output=True, text=True)
    if pre.returncode or built.returncode:
        tmp.unlink(missing_ok=True)
        return None   # the full-text path still works (and reports shim errors)
    os.replace(tmp, pch)
    shim_text, _ = split_shim(pre.stdout, shim_dir)
    atomic_write(reference, shim_text.encode())
    return pch, shim_text
