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

_LOOP = re.compile(r"^(\s*)msl_unroll (for \(uint (\w+) = (\d+)u?; \3 < (\d+)u; "
                   r"(?:\+\+\3|\3 \+= (\d+)u)\).*)$")


def trips(start: int, end: int, step: int) -> int:
    return max(0, (end - start + step - 1) // step)


def cap_unroll(line: str) -> str:
    """`line` without its unroll pragma when it opens an element loop of more than
    MAX_UNROLLED_TRIPS iterations; unchanged otherwise."""
    if "msl_unroll" not in line:
        return line
    m = _LOOP.match(line)
    if m is None:
        return line
    indent, loop, _, start, end, step = m.groups()
    if trips(int(start), int(end), int(step or 1)) <= MAX_UNROLLED_TRIPS:
        return line
    return indent + loop
