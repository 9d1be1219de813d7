"""Every environment variable msltrans reads, in one table, and the one way to read them.

Python code reads a variable through `text(NAME)` (or `raw`, `is_set`), naming a constant of
this module; a name that is not in `SETTINGS` is a `KeyError`, so a new variable cannot be
read without a row here. The simulator's C runtime and the lanes pass read theirs with
`getenv` (`c_reader` says which). The README's "Settings" table is `readme_table()`:
`tests/test_settings.py` holds the two equal, and `python -m msltrans.settings` prints it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ENGINE = "MSLTRANS_ENGINE"
TRITON_BACKEND = "TRITON_DEFAULT_BACKEND"
INDUCTOR = "MSLTRANS_INDUCTOR"
FP64 = "MSLTRANS_FP64"
MSL_VERSION = "MSLTRANS_MSL_VERSION"
FAST_MATH = "PYTORCH_MPS_FAST_MATH"
DOT_FRAGMENTS = "MSLTRANS_DOT_FRAGMENTS"
ALIGN_VARIANTS = "MSLTRANS_ALIGN_VARIANTS"
PRINT_BUFFER_BYTES = "MSLTRANS_PRINT_BUFFER_BYTES"
CLANG = "MSLTRANS_CLANG"
SIM_CACHE_DIR = "MSLTRANS_SIM_CACHE_DIR"
SIM_CAS_SPURIOUS = "MSLTRANS_SIM_CAS_SPURIOUS"
SIM_COHERENCE = "MSLTRANS_SIM_COHERENCE"
SIM_LANES = "MSLTRANS_SIM_LANES"
SIM_THREADS = "MSLTRANS_SIM_THREADS"
SIM_DISPATCH_TEST = "MSLTRANS_SIM_DISPATCH_TEST"
SIM_ALIGNMENT_CHECK = "MSLTRANS_SIM_ALIGNMENT_CHECK"
SIM_TIMEOUT = "MSLTRANS_SIM_TIMEOUT"
SIM_MARCH = "MSLTRANS_SIM_MARCH"
SIM_NO_PCH = "MSLTRANS_SIM_NO_PCH"
SIM_LANES_CHECK_LIVE = "MSLTRANS_SIM_LANES_CHECK_LIVE"
SIM_LANES_TRACE = "MSLTRANS_SIM_LANES_TRACE"
TRACEBACK = "MSLTRANS_TRACEBACK"
RECORD_MSL = "MSLTRANS_RECORD_MSL"


@dataclass(frozen=True)
class Setting:
    name: str
    form: str  # how the README writes it: `NAME=VALUE` with the accepted values
    effect: str  # the README's "effect" column (Markdown)
    c_reader: str = ""  # the C/C++ code that reads it with getenv, if any


_SIM = "[docs/simulator.md](docs/simulator.md)"
_SIM_EXEC = "[docs/sim-execution.md](docs/sim-execution.md)"

SETTINGS: tuple[Setting, ...] = (
    Setting(ENGINE, "MSLTRANS_ENGINE=mps\\|sim",
            "force the engine (default: `mps` on a Mac with MPS, else `sim`)"),
    Setting(TRITON_BACKEND, "TRITON_DEFAULT_BACKEND=metal",
            "use msltrans on a machine where a CUDA/AMD driver is active"),
    Setting(INDUCTOR, "MSLTRANS_INDUCTOR=1",
            "route `torch.compile`'s Triton kernels through msltrans from `import torch` on "
            "(as `msltrans.inductor.enable()`; [docs/inductor.md](docs/inductor.md))"),
    Setting(FP64, "MSLTRANS_FP64=refuse", "refuse fp64 instead of downcasting it with a warning"),
    Setting(MSL_VERSION, "MSLTRANS_MSL_VERSION=3.1\\|3.2\\|4.0",
            "the MSL version kernels are written for (default: what this macOS compiles, 3.2 "
            "off a Mac; [docs/backend.md](docs/backend.md))"),
    Setting(FAST_MATH, "PYTORCH_MPS_FAST_MATH=1",
            "torch's fast-math switch: msltrans's kernels pin safe math by pragma (MSL 3.2 on); "
            "below MSL 3.2 msltrans refuses to launch while it is set (not `0`)"),
    Setting(DOT_FRAGMENTS, "MSLTRANS_DOT_FRAGMENTS=0",
            "keep every `tt.dot` result in threadgroup tiles instead of simdgroup-matrix "
            "fragments in registers (a debugging aid: slower, same results within the stated "
            "bounds; also the `dot_fragments` compile option)"),
    Setting(ALIGN_VARIANTS, "MSLTRANS_ALIGN_VARIANTS=0",
            "launch every kernel from its first compile, never a launch-time alignment variant "
            "(default: an integer argument whose value makes an access 16 bytes wide picks a "
            "variant compiled with that divisibility; its layout may sum floats in another "
            "order than Triton's CUDA backend at the same non-16-divisible value; "
            "docs/backend.md)"),
    Setting(PRINT_BUFFER_BYTES, "MSLTRANS_PRINT_BUFFER_BYTES=N",
            "size of the `tl.device_print` / `tl.device_assert` buffer (default 8 MiB; "
            "[docs/debugging.md](docs/debugging.md))"),
    Setting(CLANG, "MSLTRANS_CLANG=/path/to/clang",
            "the simulator's compiler (default: clang-19/18/17, then `ziglang`)"),
    Setting(SIM_CACHE_DIR, "MSLTRANS_SIM_CACHE_DIR",
            "the simulator's compile cache (default `~/.cache/msltrans/sim`)"),
    Setting(SIM_CAS_SPURIOUS, "MSLTRANS_SIM_CAS_SPURIOUS=N",
            "the simulator's weak compare-exchange fails spuriously every Nth call of a "
            "dispatch (N >= 2; tests CAS retry loops)", c_reader="the simulator's C runtime"),
    Setting(SIM_COHERENCE, "MSLTRANS_SIM_COHERENCE=auto\\|1\\|0",
            "which kernel libraries the simulator builds with the cross-threadgroup coherence "
            "check (a plain load of another threadgroup's store from a buffer that is not "
            "`coherent(device)` raises `CoherenceError`): `auto` (default) those using device "
            "atomics or `atomic_thread_fence`, `1` all, `0` none "
            f"({_SIM_EXEC}, \"Cross-threadgroup coherence\")"),
    Setting(SIM_LANES, "MSLTRANS_SIM_LANES=fibers",
            "run every simulated thread on its own fiber, also for kernels the lanes pass gave "
            "a simdgroup-at-a-time function (the reference model; default: use that function; "
            f"{_SIM_EXEC}, \"Lanes mode\")"),
    Setting(SIM_THREADS, "MSLTRANS_SIM_THREADS=N",
            "worker threads running a dispatch's threadgroups (default: the CPUs this process "
            "may use that no other program is using at the dispatch, so one on a busy "
            f"machine; {_SIM_EXEC}, \"Execution model\")",
            c_reader="the simulator's C runtime too"),
    Setting(SIM_DISPATCH_TEST, "MSLTRANS_SIM_DISPATCH_TEST=chunk=N,reverse,late_ms=N",
            "how a dispatch hands out threadgroups, a test aid: `chunk=N` groups a claim, "
            "`reverse` claims from the last group down, `late_ms=N` pool workers start N ms "
            "late, `caller_late_ms=N` the calling thread does, `running=N` the worker count "
            "assumes N runnable threads on the machine, `no_prewake` pool workers are not "
            "woken before the dispatch (results must not change)",
            c_reader="the simulator's C runtime"),
    Setting(SIM_ALIGNMENT_CHECK, "MSLTRANS_SIM_ALIGNMENT_CHECK=1",
            "build simulator kernels with a check of every threadgroup access's alignment (a "
            "misaligned one fails the dispatch naming the line; off by default: slower, and it "
            "changes how bf16 values move through registers; "
            f"{_SIM}, \"What the simulator refuses\")"),
    Setting(SIM_TIMEOUT, "MSLTRANS_SIM_TIMEOUT=S",
            "a simulator dispatch's time limit in seconds (default 300; 0: none; the "
            "`timeout=` keyword of a kernel call overrides it)"),
    Setting(SIM_MARCH, "MSLTRANS_SIM_MARCH=ARCH\\|none",
            "the `-march` the simulator builds kernels with (default `x86-64-v3` where the CPU "
            "has AVX2, FMA and F16C; `none`: the compiler's default)"),
    Setting(SIM_NO_PCH, "MSLTRANS_SIM_NO_PCH=1",
            "build simulator kernels without the shim's precompiled header"),
    Setting(SIM_LANES_CHECK_LIVE, "MSLTRANS_SIM_LANES_CHECK_LIVE=1",
            "the lanes pass checks each liveness answer against a plain walk (a test aid, in "
            "the environment of the clang command)", c_reader="the lanes pass"),
    Setting(SIM_LANES_TRACE, "MSLTRANS_SIM_LANES_TRACE=1",
            f"the lanes pass says why a kernel has no lanes entry ({_SIM_EXEC}, \"Lanes mode\")",
            c_reader="the lanes pass"),
    Setting(TRACEBACK, "MSLTRANS_TRACEBACK=1", "full Python tracebacks from the `msltrans` CLI"),
    Setting(RECORD_MSL, "MSLTRANS_RECORD_MSL=DIR",
            "write every kernel's MSL to `DIR/<kernel>-<sha256[:16]>.metal` as it is lowered "
            "(`scripts/msl_identity.py` compares two such records: is the MSL of every test "
            "kernel byte-identical at two git refs?)"),
)

_BY_NAME = {s.name: s for s in SETTINGS}


def _known(name: str) -> str:
    if name not in _BY_NAME:
        raise KeyError(f"{name} is not in msltrans.settings.SETTINGS")
    return name


def raw(name: str) -> str | None:
    """The variable's value as the environment holds it, None when unset."""
    return os.environ.get(_known(name))


def text(name: str, default: str = "") -> str:
    """The value with surrounding blanks stripped; `default` when unset."""
    value = raw(name)
    return default if value is None else value.strip()


def is_set(name: str) -> bool:
    """Set to anything but the empty string."""
    return bool(raw(name))


def set_default(name: str, value: str) -> str:
    """`os.environ.setdefault` for a known variable; returns the value in force."""
    return os.environ.setdefault(_known(name), value)


def put(name: str, value: str | None) -> None:
    """Set a known variable for this process and its children (None: unset it)."""
    if value is None:
        os.environ.pop(_known(name), None)
    else:
        os.environ[_known(name)] = value


def readme_table() -> str:
    """The README's settings table (Markdown)."""
    rows = ["| variable | effect |", "|---|---|"]
    for s in SETTINGS:
        note = f" (read by {s.c_reader})" if s.c_reader else ""
        rows.append(f"| `{s.form}` | {s.effect}{note} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(readme_table(), end="")
