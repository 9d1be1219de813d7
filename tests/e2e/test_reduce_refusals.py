"""Correct or refuse: layouts the reduce/scan plan cannot honour are refused by the plan.

Triton 3.9 only accepts #linear encodings that are permutation matrices after removing
broadcast bases, so TTGIR cannot carry these layouts today; the plan still refuses them
(rather than assuming) in case a later Triton or a hand-built layout does.
"""

from __future__ import annotations

import pytest

from msltrans.layout import LinearLayout
from msltrans.lower.reduce.axis_plan import pext_expr, plan_axis, spread


def test_plan_accepts_blocked_bits() -> None:
    ll = LinearLayout((8, 64), reg=((0, 1), (4, 0)),
                      lane=((0, 2), (0, 4), (0, 8), (0, 16), (0, 32)),
                      warp=((1, 0), (2, 0), (0, 0)))
    plan = plan_axis(ll, 1)
    assert not isinstance(plan, str)
    assert [(b.kind, b.bit) for b in plan.bits] == [("reg", 0)] + [("lane", i) for i in range(5)]
    assert plan.other_regs == (1,)
    other = plan_axis(ll, 0)
    assert not isinstance(other, str)
    assert [(b.kind, b.bit) for b in other.bits] == [("warp", 0), ("warp", 1), ("reg", 1)]


@pytest.mark.parametrize(("reg", "why"), [
    (((1, 1), (0, 2), (0, 1)), "mixes the axis"),
    (((0, 3), (0, 2)), "not a single bit"),
    (((0, 1), (0, 1), (0, 2)), "held twice"),
    (((0, 1),), "does not cover"),
])
def test_plan_refuses(reg: tuple, why: str) -> None:
    plan = plan_axis(LinearLayout((2, 4), reg=reg, lane=(), warp=()), 1)
    assert isinstance(plan, str) and why in plan


def test_bit_helpers() -> None:
    assert spread(0b101, [1, 3, 4]) == 0b10010
    assert pext_expr("x", []) == "0u"
    assert pext_expr("x", [2]) == "(((x >> 2u) & 1u))"
