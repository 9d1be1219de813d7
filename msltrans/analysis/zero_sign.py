"""Values whose zero sign no use can see.

`tl.maximum` / `tl.max` (arith.maxnumf) order -0.0 below +0.0 (docs/semantics.md), which
Metal's `fmax` leaves open, so msltrans calls a helper that settles it (three operations for
fmax's one). Where nothing the kernel computes from the result depends on the sign of a zero,
plain `precise::fmax` gives the same output bits: a softmax's row maximum `m` only reaches
`exp(x - m)`, and `x - (+0)` and `x - (-0)` differ at most in the sign of a zero, which
`exp` maps to the same 1.0.

`zero_sign_unseen(v, graph)` is that argument, made for the IR: every path from `v` goes
 - through ops that move elements and keep their bits (splat, broadcast, layouts),
 - through `addf`, `subf`, `mulf`, `negf`, the four min/max flavours and `select`, whose
   results differ at most in a zero's sign when an operand does (x + -0 and x + +0 are equal
   unless x is a zero; a zero times anything is a zero or NaN; a min/max or a select returns
   an operand or a value equal to it), or
 - through `scf.yield` into the values it becomes: an scf.for's iteration argument and
   result, an scf.if's result (an online softmax's running maximum `m_i`), or
 - out of a tt.reduce's combine region whose one op is such a carry (a row maximum's
   `maxnumf`) into the reduction's result: every partial result of the tree then differs
   from the exact one at most in a zero's sign,
and each path ends in `math.exp` / `math.exp2` (exp(-0) = exp(+0) = 1), in `arith.cmpf`
(IEEE comparisons treat -0 and +0 as equal), or in nothing (a value no op reads). Any other
use (a store, a division, a call, a reduction, a loop's initial value, another terminator)
makes it visible.

Not taken, measured: `m + w` with `w` from `exp`/`log2` (never -0, so the sum's bits do not
depend on m's zero sign) and initial values of a second loop would also free tutorial 06's
running maximum (stored as `m_i + log2(l_i)`), but on the GPU proxy that kernel ran 3 %
slower at d64 and 1.5 % at d128 causal, same MSL otherwise
(benchmarks/results/proxy-2026-12-06-attention-tutorial-max.json).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from msltrans.ir.model import Op, Value

# Ops that copy elements unchanged into another shape or layout.
_MOVES = frozenset({
    "tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans",
    "ttg.convert_layout",
})
# Float ops whose result differs at most in a zero's sign when an operand does.
_CARRIES = frozenset({
    "arith.addf", "arith.subf", "arith.mulf", "arith.negf", "arith.maxnumf", "arith.minnumf",
    "arith.maximumf", "arith.minimumf", "arith.select",
})
# Ops whose result is the same for -0.0 and +0.0.
_ENDS = frozenset({"math.exp", "math.exp2", "arith.cmpf"})


class UseGraph(Protocol):
    """What the lowering knows of a function's values (Emitter.analyse)."""

    @property
    def users(self) -> Mapping[int, Sequence[tuple[Op, int]]]:
        """value id -> (op, operand index) of its uses"""

    @property
    def owners(self) -> Mapping[int, Op]:
        """id(a region's terminator) -> the op whose region it ends"""


def _carried(user: Op, index: int, graph: UseGraph) -> list[Value] | None:
    """The values operand `index` of `user` becomes when `user` is the scf.yield of a for
    or an if, or the return of a reduction whose combine is one carry; None otherwise."""
    if user.name not in ("scf.yield", "tt.reduce.return"):
        return None
    owner = graph.owners.get(id(user))
    if owner is None or index >= len(owner.results):
        return None
    if owner.name == "tt.reduce":
        body = owner.regions[0].blocks[0].ops
        return [owner.results[index]] if len(body) == 2 and body[0].name in _CARRIES else None
    if owner.name == "scf.for":  # the next iteration's argument (after the induction
        return [owner.results[index], owner.regions[0].blocks[0].args[index + 1]]
    if owner.name == "scf.if":  # variable) and, after the last, the loop's result
        return [owner.results[index]]
    return None


def zero_sign_unseen(value: Value, graph: UseGraph) -> bool:
    """True when the kernel's results are the same whichever sign a zero `value` has."""
    seen: set[int] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if v.id in seen:
            continue
        seen.add(v.id)
        for user, index in graph.users.get(v.id, ()):
            if user.name in _ENDS:
                continue
            if user.name in _MOVES or user.name in _CARRIES:
                todo.extend(user.results)
                continue
            after = _carried(user, index, graph)
            if after is None:
                return False
            todo.extend(after)
    return True
