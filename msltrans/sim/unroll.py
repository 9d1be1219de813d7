"""Which of msltrans's element loops the simulator's build unrolls.

msltrans's MSL marks every element loop `msl_unroll for (uint r = 0; r < Nu; ...)` (the
kernel template defines `msl_unroll` as the `unroll(full)` pragma) so that on Apple's GPU its
arrays stay registers. On the CPU a fully unrolled loop of many iterations costs far more to
build than it saves to run: a 64x64x128 fp16 `tl.dot` on 4 warps (its register path: 32 rows
of a 128-step fma chain, per thread) is 4,096 fma steps of straight-line code, and with the
per-thread and the lanes entry both optimised and generated the build took 3.6 s of CPU (the
fp8 one, its operands decoded at each step, 17.7 s); with loops of more than
MAX_SIM_UNROLLED_TRIPS iterations left as loops, 0.5 and 0.6 s.

So the simulator's build drops the pragma from element loops of more than
MAX_SIM_UNROLLED_TRIPS iterations (LLVM's own unroller still decides for them, as for any
loop). Only the pragma token goes, replaced by blanks, so lines and columns stay the source's;
the MSL text itself (what goes to Apple, the cache key) is unchanged. The results are the
same IEEE operations in the same order either way (no fast-math, contraction off). Loops over
simdgroup fragments are short (at most 64 tiles a simdgroup), so their matrices stay at fixed
places and lanes mode keeps taking them (docs/simulator.md, "Lanes mode").
"""

from __future__ import annotations

import re

# The most iterations of an element loop the simulator still fully unrolls.
MAX_SIM_UNROLLED_TRIPS = 64

_PRAGMA = "msl_unroll "
_LOOP = re.compile(r"\bmsl_unroll (?=for \(uint (\w+) = (\d+)u?; \1 < (\d+)u; "
                   r"(?:\+\+\1|\1 \+= (\d+)u)\))")


def _trips(match: re.Match[str]) -> int:
    start, end, step = int(match.group(2)), int(match.group(3)), int(match.group(4) or 1)
    return max(0, (end - start + step - 1) // step)


def cap_unrolls(source: str, max_trips: int = MAX_SIM_UNROLLED_TRIPS) -> str:
    """`source` with the unroll pragma blanked out of element loops of over `max_trips`
    iterations (same length, same lines)."""
    if _PRAGMA not in source:
        return source

    def replace(match: re.Match[str]) -> str:
        return match.group(0) if _trips(match) <= max_trips else " " * len(_PRAGMA)

    return _LOOP.sub(replace, source)
