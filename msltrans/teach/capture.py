"""What the teaching views show of one compiled kernel: a `Capture` holds the TTGIR with
its locations, the MSL, the launch metadata, and the refusal if the kernel is refused (a
refusal does not stop the capture: the page shows it at its source line, with the stages
that did succeed).

`from_compiled` builds one from msltrans.toolchain's result, `from_launch` from what a
script's launch compiled; `msltrans.cli.views.capture(args)` takes the dump's flags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msltrans import toolchain
from msltrans.errors import MetalNonRecoverableError
from msltrans.toolchain import Compiled


@dataclass(frozen=True)
class Refusal:
    """Why the kernel does not compile, and where (`file` is a base name, as the op comments
    and MetalNonRecoverableError write it)."""

    stage: str  # "front end", "ttir", "ttgir" or "msl"
    message: str
    op: str | None = None
    file: str | None = None
    line: int | None = None


@dataclass
class Capture:
    path: Path  # the file given on the command line (.py or .ttgir)
    kernel: str
    ttgir: str | None = None  # printed with locations (`loc(...)`)
    msl: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    num_warps: int | None = None
    refusal: Refusal | None = None
    note: str = ""  # how the specialization was chosen


_LOC_RE = re.compile(r"^(?P<file>.+):(?P<line>\d+)$")


def _refusal(stage: str, exc: MetalNonRecoverableError) -> Refusal:
    file = line = None
    m = _LOC_RE.match(exc.location or "")
    if m:
        file, line = m.group("file"), int(m.group("line"))
    return Refusal(stage, str(exc), exc.op, file, line)


def from_compiled(path: Path, out: Compiled, note: str, fn: Any = None) -> Capture:
    """A Capture of what `toolchain.compile_kernel(..., partial=True)` produced."""
    cap = Capture(path, out.kernel, out.ttgir, out.msl, out.metadata if out.msl else {},
                  out.options.num_warps, note=note)
    if isinstance(out.error, MetalNonRecoverableError):
        cap.refusal = _refusal(out.failed_stage or "msl", out.error)
    elif out.error is not None:  # Triton's front end
        line, detail = toolchain.front_end_error(out.error, fn)
        cap.refusal = Refusal("front end", detail, None, path.name, line)
    return cap


def from_launch(path: Path, kernel_name: str, kernel: Any) -> Capture:
    """A Capture of what a script's first launch compiled (Triton's compiled kernel)."""
    meta = kernel.metadata
    metadata = meta._asdict() if hasattr(meta, "_asdict") else dict(vars(meta))
    return Capture(path, kernel_name, toolchain.stage_text(kernel, "ttgir"),
                   toolchain.stage_text(kernel, "msl"), metadata, metadata.get("num_warps"),
                   note=f"captured from running {path.name}: its first launch "
                        f"({toolchain.launch_signature(kernel)})")
