"""Values whose zero sign no use can see.

`tl.maximum` / `tl.max` (arith.maxnumf) order -0.0 below +0.0 (docs/semantics.md), which
Metal's `fmax` leaves open, so msltrans calls a helper that settles it (three operations for
fmax's one). Where nothing the kernel computes from the result depends on the sign of a zero,
plain `precise::fmax` gives the same output bits: a softmax's row maximum `m` only reaches
`exp(x - m)`, and `x - (+0)` and `x - (-0)` differ at most in the sign of a zero, which
`exp` maps to the same 1.0.

`zero_sign_unseen(v, users)` is that argument, made for the IR: every path from `v` goes
 - through ops that move elements and keep their bits (splat, broadcast, layouts), or
 - through `addf`, `subf`, `mulf`, `negf`, whose results differ at most in a zero's sign
   when an operand does (x + -0 and x + +0 are equal unless x is a zero; a zero times
   anything is a zero or NaN), and each path ends in
 - `math.exp` / `math.exp2` (exp(-0) = exp(+0) = 1) or `arith.cmpf` (IEEE comparisons treat
   -0 and +0 as equal).
Any other use (a store, a loop-carried value, a division, a call, ...) makes it visible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from msltrans.ir.model import Op, Value

# Ops that copy elements unchanged into another shape or layout.
_MOVES = frozenset({
    "tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans",
    "ttg.convert_layout",
})
# Float ops whose result differs at most in a zero's sign when an operand does.
_CARRIES = frozenset({"arith.addf", "arith.subf", "arith.mulf", "arith.negf"})
# Ops whose result is the same for -0.0 and +0.0.
_ENDS = frozenset({"math.exp", "math.exp2", "arith.cmpf"})

Users = Mapping[int, Sequence[tuple[Op, int]]]


def zero_sign_unseen(value: Value, users: Users) -> bool:
    """True when the kernel's results are the same whichever sign a zero `value` has."""
    seen: set[int] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if v.id in seen:
            continue
        seen.add(v.id)
        uses = users.get(v.id, ())
        if not uses:
            return False  # unused or unknown: nothing proves it
        for user, _ in uses:
            if user.name in _ENDS:
                continue
            if user.name in _MOVES or user.name in _CARRIES:
                todo.extend(user.results)
                continue
            return False
    return True
