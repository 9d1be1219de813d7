"""The floating-point pragmas of a kernel source, held against what the simulator computes.

The simulator computes IEEE arithmetic with contraction off (msltrans/sim/compiler.py). Apple's
compiler computes what the source's pragmas and torch's compile options ask for
(msltrans/math_mode.py): where those differ from what the simulator runs, its results would
not be Apple's, so the build refuses instead (MSL specification, section 1.6.3):

- `#pragma METAL fp math_mode(...)` below MSL 3.2 (it is a Metal 3.2 feature), or with a mode
  other than `safe` (fast and relaxed math drop NaN/infinity semantics the simulator keeps);
- `#pragma METAL fp contract(on|fast)` (Metal would fuse multiply-adds the simulator keeps
  apart);
- `PYTORCH_MPS_FAST_MATH` set for this process while the source does not pin
  `math_mode(safe)`: torch would compile it with fast math.

Without a `contract` pragma Apple's compiler may contract `a*b + c` where the simulator does
not; msltrans's own kernels always say `contract(off)`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from msltrans import math_mode
from msltrans.sim.attributes import line_of
from msltrans.sim.errors import CompileError

_PRAGMA = re.compile(
    r"^[ \t]*#[ \t]*pragma[ \t]+METAL[ \t]+fp[ \t]+(\w+)[ \t]*\([ \t]*(\w*)[ \t]*\)", re.M)
def check(text: str, in_user_code: Callable[[int], bool], name: str, version: int) -> None:
    """Refuse what the simulator cannot compute as Apple would (see the module docstring)."""
    safe = False
    for match in _PRAGMA.finditer(text):
        if not in_user_code(match.start()):
            continue
        what, mode = match.group(1), match.group(2)
        where = f"{name}:{line_of(text, match.start())}"
        if what == "math_mode":
            if version < math_mode.SAFE_PRAGMA_VERSION:
                raise CompileError(
                    f"{where}: `#pragma METAL fp math_mode` needs MSL 3.2 (specification "
                    f"section 1.6.3); this source is compiled as MSL {version // 100}."
                    f"{version % 100 // 10}: guard it with `#if __METAL_VERSION__ >= 320`")
            if mode != "safe":
                raise CompileError(
                    f"{where}: `math_mode({mode})`: the simulator computes IEEE (safe) math "
                    "only; Metal's fast and relaxed modes assume no NaN or infinity, so its "
                    "results would not be Apple's")
            safe = True
        elif what == "contract" and mode != "off":
            raise CompileError(
                f"{where}: `contract({mode})`: the simulator compiles with contraction off, "
                "so multiply-adds Metal would fuse stay two roundings here; write fma() "
                "where a fused result is meant")
    if math_mode.torch_fast_math() and not safe:
        raise CompileError(
            f"{name}: {math_mode.FAST_MATH_ENV} is set, so torch would compile this source "
            "with fast math (no NaN or infinity, reassociation), which the simulator does not "
            "model; pin `#pragma METAL fp math_mode(safe)` (MSL 3.2, section 1.6.3) or unset "
            f"{math_mode.FAST_MATH_ENV}")
