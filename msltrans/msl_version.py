"""The Metal Shading Language version msltrans targets — the ONE place that knows which MSL
feature needs which version, and which macOS compiles which version.

Facts (docs/msl-subset.md cites them in full):

- The MSL specification (Version 4, 2025-06-05) dates each feature: `bfloat` needs Metal 3.1
  (§2.1 Scalar Data Types); `thread_scope` and `atomic_thread_fence` need Metal 3.2 on Apple
  silicon (§6.15.2, §6.15.3), and `memory_order_seq_cst` exists only for that fence (§6.15.1:
  every other atomic function takes `memory_order_relaxed` alone).
- `torch.mps.compile_shader` compiles with MSL 3.1 on macOS 14, 3.2 on macOS 15 and 4.0 on
  macOS 26 (PyTorch's `MetalShaderLibrary::compileLibrary`, aten/src/ATen/native/mps/
  OperationUtils.mm), and PyTorch's MPS backend itself needs macOS 14 (torch >= 2.9 raises
  "The MPS backend is supported on MacOS 14.0+").

So msltrans supports MSL 3.1 (macOS 14) and up. Kernels that need a newer feature (the fences
of acquire/release atomics and volatile loads need 3.2) are refused when the target is older,
with the op, the source line and the macOS that has it. The simulator compiles with
`-D__METAL_VERSION__=<target>` and its headers offer only what that version gives.

The target: `$MSLTRANS_MSL_VERSION` ("3.1", "3.2", "4.0" or 310/320/400) if set; on a Mac with
MPS, what torch compiles with on this macOS; elsewhere (the simulator) `DEFAULT`.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass

from msltrans import settings
from msltrans.errors import MetalNonRecoverableError

ENV = settings.MSL_VERSION
MINIMUM = 310
DEFAULT = 320
SUPPORTED = (310, 320, 400)
# macOS major → the MSL version torch.mps.compile_shader asks Metal for.
TORCH_MSL_BY_MACOS = ((26, 400), (15, 320), (14, 310))
MACOS_FOR = {310: "macOS 14", 320: "macOS 15", 400: "macOS 26"}


@dataclass(frozen=True)
class Feature:
    version: int
    spec: str   # where the specification dates it


# Every version-gated MSL feature msltrans emits or the simulator offers.
FEATURES: dict[str, Feature] = {
    "atomic_ulong": Feature(
        240, "MSL §2.6 Atomic Data Types and §6.15.4.6 Atomic Modify Functions (64 Bits) "
             "(atomic_ulong, its void max/min: Metal 2.4 and later, Apple silicon)"),
    "bfloat": Feature(310, "MSL §2.1 Scalar Data Types (bfloat: Metal 3.1 and later)"),
    "thread_scope": Feature(320, "MSL §6.15.2 Thread Scope (Metal 3.2 and later, Apple silicon)"),
    "atomic_thread_fence": Feature(
        320, "MSL §6.15.3 Fence Functions (Metal 3.2 and later, Apple silicon)"),
    "memory_order_seq_cst": Feature(
        320, "MSL §6.15.1 Memory Order (seq_cst on atomic_thread_fence, Metal 3.2 and later)"),
    "coherent": Feature(
        320, "MSL §4.8 Memory Coherency (coherent(device) buffers, visible across "
             "threadgroups: Metal 3.2 and later)"),
}


def text(version: int) -> str:
    return f"{version // 100}.{version % 100 // 10}"


def parse(value: str | int) -> int:
    """'3.2', '3_2', '320' or 320 → 320; anything msltrans does not support is an error."""
    raw = str(value).strip()
    match = re.fullmatch(r"(\d)[._](\d)", raw)
    number = int(match.group(1)) * 100 + int(match.group(2)) * 10 if match else None
    if number is None and raw.isdigit():
        number = int(raw)
    if number not in SUPPORTED:
        raise MetalNonRecoverableError(
            f"MSL version {raw!r} is not supported",
            hint=f"msltrans targets MSL {', '.join(text(v) for v in SUPPORTED)} "
                 f"({MACOS_FOR[MINIMUM]} or later); set {ENV} to one of them")
    return number


def for_macos(major: int) -> int:
    """The MSL version torch.mps.compile_shader compiles with on macOS `major`."""
    for macos, version in TORCH_MSL_BY_MACOS:
        if major >= macos:
            return version
    raise MetalNonRecoverableError(
        f"macOS {major} is not supported: torch's MPS backend and msltrans need macOS 14+")


def _macos_major() -> int | None:
    release = platform.mac_ver()[0]
    return int(release.split(".")[0]) if release else None


def target() -> int:
    """The MSL version kernels are compiled for on this machine (see the module docstring)."""
    forced = settings.text(ENV)
    if forced:
        return parse(forced)
    major = _macos_major()
    if major is not None and settings.text(settings.ENGINE).lower() != "sim":
        return for_macos(major)
    return DEFAULT


def supports(feature: str, version: int) -> bool:
    return version >= FEATURES[feature].version


def require(feature: str, version: int, *, what: str, location: str | None = None,
            op: str | None = None) -> None:
    """Refuse `what` when `feature` is newer than the target `version`."""
    if supports(feature, version):
        return
    need = FEATURES[feature].version
    macos, set_to = MACOS_FOR.get(need, MACOS_FOR[MINIMUM]), text(max(need, MINIMUM))
    raise MetalNonRecoverableError(
        f"{what} needs MSL {text(need)} ({FEATURES[feature].spec}); the target is MSL "
        f"{text(version)}", op=op, location=location,
        hint=f"run on {macos} or later (set {ENV}={set_to} to compile for it)")


def features_header() -> str:
    """msltrans/sim/include/msl_sim/features.h: the simulator's headers gate each feature on
    these macros, so the versions live here only (a test keeps the file in step)."""
    lines = ["// Generated from msltrans/msl_version.py FEATURES (tests/sim/test_msl_version.py",
             "// checks it): which version-gated MSL features __METAL_VERSION__ offers.",
             "#ifndef MSL_SIM_FEATURES_H", "#define MSL_SIM_FEATURES_H",
             "#ifndef __METAL_VERSION__",
             '#error "compile with -D__METAL_VERSION__=<version> (msltrans.sim passes the target)"',
             "#endif",
             f"#if __METAL_VERSION__ < {MINIMUM}",
             f'#error "msltrans supports MSL {text(MINIMUM)} and later"',
             "#endif"]
    for name, feature in FEATURES.items():
        lines.append(f"// {feature.spec}")
        lines.append(f"#define MSL_SIM_HAS_{name} (__METAL_VERSION__ >= {feature.version})")
    lines.append("#endif")
    return "\n".join(lines) + "\n"


def define(version: int) -> str:
    """The predefined macro Apple's compiler sets (MSL §1.6.2 Preprocessor Definitions)."""
    return f"-D__METAL_VERSION__={version}"
