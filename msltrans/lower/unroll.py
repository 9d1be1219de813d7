"""Which element loops are unrolled.

Element loops (`msl_unroll for (uint r = 0; r < Nu; ++r)`) are fully unrolled so that their
arrays stay registers (the kernel template defines `msl_unroll` as clang's and Apple's
`unroll(full)` pragma). Past a size no register file holds the array anyway (an Apple GPU
thread has at most a few hundred 32-bit registers), and full unrolling only makes the
compile explode: a 64x128x128 fp32 register-path tt.dot on 2 warps converts its A operand
into 4,096 registers a thread; with that one loop unrolled clang takes 121 s, without it
5.5 s (same MSL otherwise). Such loops keep a plain `for`; the compiler may still unroll
them partially.
"""

from __future__ import annotations

import re

# The most iterations of one element loop that is fully unrolled.
MAX_UNROLLED_TRIPS = 1024
# The most statements a nest of element loops unrolls into (the register-path tt.dot's
# registers x K fma chain: past it only the K chain is unrolled; 128 x 128 fully unrolled,
# 16,384 fmas indexed through tables, is minutes of clang for arrays that live in memory).
MAX_UNROLLED_NEST = 4096

_LOOP = re.compile(r"^\s*msl_unroll for \(uint (\w+) = (\d+)u?; \1 < (\d+)u; "
                   r"(?:\+\+\1|\1 \+= (\d+)u)\)")


def unrolled_trips(line: str) -> int | None:
    """Iterations of the element loop `line` opens with the unroll pragma (constant bounds),
    None for any other line."""
    m = _LOOP.match(line) if "msl_unroll" in line else None
    if m is None:
        return None
    start, end, step = int(m.group(2)), int(m.group(3)), int(m.group(4) or 1)
    return max(0, (end - start + step - 1) // step)


def cap_unroll(line: str) -> str:
    """`line` without its unroll pragma when it opens an element loop of more than
    MAX_UNROLLED_TRIPS iterations; unchanged otherwise."""
    n = unrolled_trips(line)
    if n is None or n <= MAX_UNROLLED_TRIPS:
        return line
    return line.replace("msl_unroll ", "", 1)
