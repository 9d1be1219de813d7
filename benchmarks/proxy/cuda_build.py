"""Build mapped CUDA with nvcc (here, no GPU needed) and read what the compiler made of it.

`build(cuda_source, name, out_dir)` writes `<name>.cu` and `<name>.cubin` (sm_90a, -O3) and
returns ptxas's resource report (registers, stack frame, spills, shared memory) and the SASS
instruction mix: global loads/stores by width, shared-memory accesses, barriers, shuffles,
FFMA and the total. These are the static facts the proxy's timings are read against.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.proxy.msl_to_cuda import HEADER

ARCH = "sm_90a"
NVCC_FLAGS = ("-O3", f"-arch={ARCH}", "-cubin", "-Xptxas", "-v", "-diag-suppress", "177,550")


def cuobjdump() -> str | None:
    """cuobjdump from PATH, else the copy Triton's wheel carries."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        import triton

        path = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        return str(path) if path.exists() else None
    except ImportError:
        return None


@dataclass
class CudaBuild:
    cubin: Path
    registers: int = 0
    stack: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    shared: int = 0
    sass: dict[str, int] = field(default_factory=dict)


_SASS_CLASSES = {
    "ldg32": r"LDG\.E(?:\.(?:EL|LU|EF|NA|CONSTANT|STRONG\.\w+))*\s",
    "ldg64": r"LDG\.E\.64",
    "ldg128": r"LDG\.E\.128",
    "ldg16": r"LDG\.E\.(?:U|S)16",
    "ldg8": r"LDG\.E\.(?:U|S)8",
    "stg32": r"STG\.E(?:\.(?:EL|EF|NA|STRONG\.\w+))*\s",
    "stg64": r"STG\.E\.64",
    "stg128": r"STG\.E\.128",
    "stg16": r"STG\.E\.U?16",
    "lds": r"\bLDS(?:\.\w+)*\s",
    "sts": r"\bSTS(?:\.\w+)*\s",
    "bar": r"\bBAR\.SYNC",
    "shfl": r"\bSHFL\.",
    "ffma": r"\bFFMA\b",
    "ldl": r"\bLDL\b",
    "stl": r"\bSTL\b",
}


def sass_mix(cubin: Path) -> dict[str, int]:
    tool = cuobjdump()
    if tool is None:
        return {}
    text = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True).stdout
    body = [ln for ln in text.splitlines() if re.match(r"\s+/\*[0-9a-f]{4,}\*/", ln)]
    mix = {k: sum(1 for ln in body if re.search(rx, ln)) for k, rx in _SASS_CLASSES.items()}
    mix["total"] = sum(1 for ln in body if "NOP" not in ln)
    return mix


def _reusable(src: Path, cubin: Path, cuda: str, argv: list[str]) -> str | None:
    """ptxas's report of an earlier build of the same source with the same command in this
    folder (its cubin newer than its source), else None: nvcc takes minutes on the
    attention backward's mapped CUDA, so a rebuild of a folder only compiles what changed."""
    report = cubin.with_suffix(".ptxas.txt")
    if not (src.exists() and cubin.exists() and report.exists()):
        return None
    if src.read_text() != cuda or cubin.stat().st_mtime < src.stat().st_mtime:
        return None
    text = report.read_text()
    first, _, rest = text.partition("\n")
    return rest if first == " ".join(argv) else None


def build(cuda: str, name: str, out_dir: Path, defines: tuple[str, ...] = ()) -> CudaBuild:
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / f"{name}.cu"
    cubin = out_dir / f"{name}.cubin"
    header = out_dir / HEADER.name
    if not header.exists() or header.read_text() != HEADER.read_text():
        shutil.copy(HEADER, header)
        for old in out_dir.glob("*.ptxas.txt"):  # the header changed: nothing is reusable
            old.unlink()
    argv = ["nvcc", *NVCC_FLAGS, *(f"-D{d}" for d in defines), "-I", str(out_dir),
            "-o", str(cubin), str(src)]
    report = _reusable(src, cubin, cuda, argv)
    if report is None:
        src.write_text(cuda)
        r = subprocess.run(argv, capture_output=True, text=True, env={**os.environ})
        if r.returncode != 0:
            raise RuntimeError(f"nvcc failed for {name}:\n{r.stderr[-4000:]}")
        report = r.stdout + r.stderr
        cubin.with_suffix(".ptxas.txt").write_text(" ".join(argv) + "\n" + report)
    b = CudaBuild(cubin)
    if m := re.search(r"Used (\d+) registers", report):
        b.registers = int(m.group(1))
    if m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill "
                      r"loads", report):
        b.stack, b.spill_stores, b.spill_loads = map(int, m.groups())
    if m := re.search(r"(\d+) bytes smem", report):
        b.shared = int(m.group(1))
    b.sass = sass_mix(cubin)
    return b
