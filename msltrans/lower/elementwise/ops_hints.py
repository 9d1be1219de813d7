"""Optimisation hints and undefined values: llvm.intr.assume, ub.poison.

`llvm.intr.assume` (tl.assume) only lets a compiler assume its condition; dropping it is
always correct, so it becomes a comment. `ub.poison` (e.g. an inlined function that returns
nothing on some path) is any value; it becomes a defined zero, but only where every use
provably tolerates an arbitrary value (stored data, arithmetic feeding stored data). A poison
address, mask, condition, divisor or loop-carried value is refused.
"""

from __future__ import annotations

from msltrans.ir.model import Op, Value
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowers
from msltrans.lower.values import zero_literal

# Results are computed from operands without traps or memory/control effects.
_PASS_THROUGH = {"tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans",
                 "ttg.convert_layout"}
_TRAPPING = {"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.ceildivsi",
             "arith.ceildivui", "arith.floordivsi"}


@lowers("llvm.intr.assume")
def assume(em: Emitter, op: Op) -> None:
    cond = em.name(op.operands[0])
    em.line(f"// assume({cond}): optimisation hint only, nothing to emit")


def _any_value_is_fine(em: Emitter, v: Value, depth: int = 0) -> str | None:
    """None when every use of `v` accepts any value, else the first use that does not."""
    if depth > 16:
        return "a long chain of uses"
    for user, idx in em.users.get(v.id, []):
        name = user.name
        if name == "tt.store" and idx == 1:
            continue
        elementwise = name.startswith(("arith.", "math.")) and name not in _TRAPPING
        if (elementwise and not (name == "arith.select" and idx == 0)) or name in _PASS_THROUGH:
            for r in user.results:
                if (bad := _any_value_is_fine(em, r, depth + 1)) is not None:
                    return bad
            continue
        return f"operand {idx} of {name}"
    return None


@lowers("ub.poison")
def poison(em: Emitter, op: Op) -> None:
    out = op.results[0]
    ctype = em.ctype(out)
    bad = None if not ctype.endswith("*") else "a pointer"
    bad = bad or _any_value_is_fine(em, out)
    if bad is not None:
        em.fail(f"ub.poison used as {bad}: no defined value is safe to substitute there",
                "make every path of the function return a value")
    zero = zero_literal(ctype)
    if em.is_tensor(out):
        em.elementwise(op, lambda: zero)
    else:
        name = em.fresh("poison")
        em.bind(out, name)
        em.line(f"{ctype} {name} = {zero};")
    em.line("// ub.poison: any value is correct for every use; zero chosen")
