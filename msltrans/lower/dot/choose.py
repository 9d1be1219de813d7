"""Which path a tt.dot takes, and the ttg.convert_layout feeding it that it folds.

`choose` is a deterministic function of the op (and of whether its K loop keeps the
accumulator resident), so the convert feeding an operand can ask it before the dot is
emitted. Simdgroup when shapes/types/size allow, else registers when the operand layouts
line up, else scratch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from msltrans import settings
from msltrans.errors import MetalNonRecoverableError
from msltrans.ir.model import Op, Value
from msltrans.lower.dot import fragment_mma
from msltrans.lower.dot import simdgroup as sg
from msltrans.lower.dot.info import DotInfo, check
from msltrans.lower.dot.registers import register_plan
from msltrans.lower.dot.state import mark_folded, resident
from msltrans.lower.emitter import Emitter

PATHS = ("auto", "fragment", "simdgroup", "registers", "scratch")
_forced: list[str] = ["auto"]


@contextlib.contextmanager
def force_path(path: str) -> Iterator[None]:
    """Tests and benchmarks: lower every tt.dot with one path ("auto" = the normal choice).
    A forced path that cannot handle a dot raises instead of falling back."""
    if path not in PATHS:
        raise ValueError(f"dot path {path!r} not in {PATHS}")
    _forced.append(path)
    try:
        yield
    finally:
        _forced.pop()


def fragments_enabled(option: bool | None = None) -> bool:
    """Whether dot results may be laid out as simdgroup fragments (fragments.py): the
    normal choice, unless a test or benchmark forces another path, or the `dot_fragments`
    option (`option`; None: MSLTRANS_DOT_FRAGMENTS, "0" = off) turns it off (a debugging
    aid: the staged paths then run)."""
    if option is None:
        option = settings.text(settings.DOT_FRAGMENTS) != "0"
    return option and _forced[-1] in ("auto", "fragment")


def choose(em: Emitter, info: DotInfo, *, resident_loop: bool = False) -> tuple[str, object]:
    """(path, its plan). `resident_loop`: the dot's K loop keeps its accumulator in
    simdgroup matrices (then C never needs staging inside the loop, so larger tiles fit)."""
    forced = _forced[-1]
    if forced in ("auto", "fragment"):
        fplan = fragment_mma.plan(em, info)
        if fplan is not None:
            return "fragment", fplan
        if forced == "fragment":
            em.fail("forced fragment path cannot take this dot (its result is not laid out "
                    "as simdgroup fragments)")
    resident_loop = resident_loop or info.out.id in resident(em)
    if forced in ("auto", "simdgroup"):
        plan = sg.plan(em, info)
        if plan is not None and (plan.per_dot_fits or resident_loop):
            return "simdgroup", plan
        if forced == "simdgroup":
            em.fail("forced simdgroup path cannot take this dot (shape, type or size)")
    if forced in ("auto", "registers"):
        rplan = register_plan(em.layout(info.out).ll, em.layout(info.a).ll,
                              em.layout(info.b).ll, info.k)
        if rplan is not None:
            return "registers", rplan
        if forced == "registers":
            em.fail("forced register path: the operand layouts do not line up")
    return "scratch", None


def _dot_user(em: Emitter, v: Value) -> tuple[Op, int] | None:
    """The tt.dot using `v` as its A (0) or B (1) operand, if that is `v`'s only use."""
    if em.uses.get(v.id) != 1:
        return None
    for op in em.producers.values():
        if op.name == "tt.dot":
            for idx, operand in enumerate(op.operands[:2]):
                if operand.id == v.id:
                    return op, idx
    return None


def folds_convert(em: Emitter, op: Op) -> bool:
    """Whether the ttg.convert_layout `op` may be skipped: its only use is an A/B operand of
    a tt.dot that stages operands through threadgroup memory anyway (simdgroup and scratch
    paths). That dot then stages the convert's source, in the source's own layout, saving
    one round trip through scratch, two barriers and the #dot_op registers (the whole K
    extent per thread)."""
    out = op.results[0]
    user = _dot_user(em, out)
    if user is None or not em.is_tensor(op.operands[0]):
        return False
    outer = em.op
    try:
        em.op = user[0]
        path, _ = choose(em, check(em, user[0]))
    except MetalNonRecoverableError:
        return False  # the dot itself will refuse, at its own location
    finally:
        em.op = outer
    if path == "registers":
        return False
    mark_folded(em, out)
    em.line("// folded into the tt.dot that uses it: the dot stages the source directly")
    return True
