"""Program ids, grid size and return: one Triton program is one threadgroup."""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowers

_AXES = "xyz"


def _axis(em: Emitter, op: Op) -> str:
    axis = op.attrs.get("axis")
    if axis not in (0, 1, 2):
        em.fail(f"program axis {axis!r}", "axis must be 0, 1 or 2")
    return _AXES[axis]


@lowers("tt.get_program_id")
def get_program_id(em: Emitter, op: Op) -> None:
    em.elementwise(op, lambda: f"int(msl_pid.{_axis(em, op)})")


@lowers("tt.get_num_programs")
def get_num_programs(em: Emitter, op: Op) -> None:
    em.elementwise(op, lambda: f"int(msl_nprog.{_axis(em, op)})")


@lowers("tt.return")
def return_(em: Emitter, op: Op) -> None:
    if op.operands:
        em.fail("tt.return with values in a kernel", "kernels return nothing")
    em.line("return;")
