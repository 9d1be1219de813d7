"""The floating-point mode a kernel is compiled in, pinned by the kernel itself.

`torch.mps.compile_shader` compiles with Metal's safe math unless the process has
`PYTORCH_MPS_FAST_MATH` set (any value but `0`), in which case it asks for `MTLMathModeFast`:
no NaN or infinity, reassociation. That would fold msltrans's `isnan` tests away, make the
`-inf` padding of softmax and attention undefined and void every bit-exact claim. So every
kernel msltrans emits starts with (msltrans/templates/kernel.metal.j2):

    #pragma METAL fp contract(off)
    #if __METAL_VERSION__ >= 320
    #pragma METAL fp math_mode(safe)
    #endif

- `math_mode(safe)` overrides the compile option for the whole file; the specification
  documents it (MSL 4, section 1.6.3) from Metal 3.2, i.e. macOS 15. On macOS 14 (MSL 3.1)
  only the compile option exists: there, with `PYTORCH_MPS_FAST_MATH` set, msltrans refuses
  to compile (`check_launch`), since nothing in the source can restore IEEE behaviour.
- `contract(off)`: Metal's compiler contracts `a*b + c` into one fma by default;
  msltrans writes `fma()` exactly where Triton's fp fusion would fuse (docs/semantics.md),
  so every other multiply-add must stay two roundings. The simulator compiles with
  contraction off (-ffp-contract=off) for the same reason.

The simulator reads these pragmas back (msltrans/sim/fp_pragmas.py) and refuses source whose
mode it cannot model.
"""

from __future__ import annotations

from msltrans import settings
from msltrans.errors import MetalNonRecoverableError

FAST_MATH_ENV = settings.FAST_MATH
SAFE_PRAGMA_VERSION = 320   # `#pragma METAL fp math_mode`: MSL 3.2 (section 1.6.3)


def torch_fast_math() -> bool:
    """Whether torch.mps.compile_shader compiles with fast math in this process."""
    value = settings.text(FAST_MATH_ENV)
    return bool(value) and value != "0"


def check_launch(version: int) -> None:
    """Refuse to hand a kernel to Metal where it would be compiled with fast math and the
    source cannot pin safe math (MSL `version` below 3.2)."""
    if version >= SAFE_PRAGMA_VERSION or not torch_fast_math():
        return
    raise MetalNonRecoverableError(
        f"{FAST_MATH_ENV} is set, so torch compiles Metal kernels with fast math (no NaN or "
        f"infinity, reassociation), and MSL {version // 100}.{version % 100 // 10} has no "
        "`#pragma METAL fp math_mode(safe)` to override it for msltrans's kernels "
        "(MSL section 1.6.3: Metal 3.2, macOS 15)",
        hint=f"unset {FAST_MATH_ENV} (or set it to 0), or run on macOS 15 or later")
