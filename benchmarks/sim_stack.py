"""What stays in memory when the simulator's clang builds a kernel at -O2.

`stack_facts(msl, kernel)` prepares the MSL exactly as the simulator's build does, then
compiles it twice more with the simulator's flags: to LLVM IR with value names kept, to read
the `alloca`s that survive -O2, and with `-fstack-usage`, to read the frame. Returns

- `array_bytes`: bytes of the generated MSL's own variables (register arrays, scalars) that
  did not become registers: the measure of "register arrays that are not registers". The
  simulator's own objects (rendezvous payloads of SIMD ops and barriers) are not counted;
- `frame_bytes`: the kernel function's whole frame as `-fstack-usage` reports it (spills on
  x86-64's 16 registers and the simulator's payloads included).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from msltrans import msl_version
from msltrans.sim.build import PRELUDE_FLAGS
from msltrans.sim.compiler import find_compiler, include_flags, language_flags
from msltrans.sim.discover import find_kernels
from msltrans.sim.entries import generate_entries
from msltrans.sim.prepare import mark_source, rewrite_threadgroup_decls, split_preprocessed

_PRIM = {"i1": 1, "i8": 1, "i16": 2, "half": 2, "bfloat": 2, "i32": 4, "float": 4, "i64": 8,
         "double": 8, "ptr": 8}


def _size(t: str) -> int:
    t = t.strip()
    m = re.fullmatch(r"\[(\d+) x (.+)\]", t)
    if m:
        return int(m.group(1)) * _size(m.group(2))
    m = re.fullmatch(r"<(\d+) x (.+)>", t)
    if m:
        return int(m.group(1)) * _size(m.group(2))
    if t.startswith("ptr"):
        return 8
    return _PRIM.get(t, 0)


def _prepared(msl: str, work: Path) -> Path:
    compiler = find_compiler()
    includes = include_flags()
    name = "kernel.metal"
    Path(work, name).write_text(mark_source(msl))
    lang = language_flags(msl_version.DEFAULT)
    pre_text = subprocess.run([*compiler.argv, "-E", *lang, *includes, *PRELUDE_FLAGS, name],
                              cwd=work, capture_output=True, text=True, check=True).stdout
    pre = split_preprocessed(pre_text, includes[1])
    kernels, pre.text = find_kernels(pre)
    text, _ = rewrite_threadgroup_decls(pre)
    Path(work, name).write_text(msl)
    out = work / f"{name}.ii"
    out.write_text(text + "\n" + generate_entries(kernels))
    return out


def _declared(msl: str) -> set[str]:
    """Names the kernel body declares (msltrans's registers and scalars)."""
    body = msl[msl.index("kernel void"):]
    return set(re.findall(r"^\s+(?:const\s+)?(?:device\s+)?[\w:<>]+\**\s+(\w+)\s*(?:\[|=|;)",
                          body, re.M))


def _ours(llvm_name: str, names: set[str]) -> bool:
    """An LLVM value name derived from an MSL variable: `x_4`, `x_4.sroa.3`, `x_41` (LLVM
    appends digits to a repeated name)."""
    head = llvm_name.split(".", 1)[0]
    return head in names or any(head.startswith(n) and head[len(n):].isdigit() for n in names)


def stack_facts(msl: str, kernel: str) -> dict[str, int]:
    compiler = find_compiler()
    lang = language_flags(msl_version.DEFAULT)
    flags = [*compiler.argv, *lang, *include_flags(), "-O2", "-fPIC"]
    names = _declared(msl)
    with tempfile.TemporaryDirectory(prefix="msltrans-stack-") as tmp:
        work = Path(tmp)
        ii = _prepared(msl, work)
        subprocess.run([*flags, "-fno-discard-value-names", "-S", "-emit-llvm", "-o",
                        "k.ll", str(ii)], cwd=work, check=True, capture_output=True)
        subprocess.run([*flags, "-c", "-fstack-usage", "-o", "k.o", str(ii)], cwd=work,
                       check=True, capture_output=True)
        ir = (work / "k.ll").read_text()
        su = (work / "k.su").read_text() if (work / "k.su").exists() else ""
    array_bytes = 0
    for fn in re.finditer(r"^define [^@]*@([\w.$]+)\(.*?^}", ir, re.M | re.S):
        if kernel not in fn.group(1):
            continue
        for m in re.finditer(r"%([\w.]+) = alloca (.+?), align", fn.group(0)):
            if _ours(m.group(1), names):
                array_bytes += _size(m.group(2))
    frame = [int(m.group(1)) for m in re.finditer(rf"{re.escape(kernel)}\S*\t(\d+)\t", su)]
    return {"array_bytes": array_bytes, "frame_bytes": max(frame, default=0)}
