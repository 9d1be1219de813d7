"""Masks that are a bound along a run: one whole-run test, then a 16-byte access.

A load or store whose mask is `offs < n` along the contiguous axis (softmax with 1000 of
1024 columns, a layer norm's last column block) is not constant over a run of registers, so
the plain vector path (vector_access.py) cannot take it. But such a mask has a shape along
the run: `offs` increases by exactly 1 from register to register (its contiguity covers the
run) and `n` is the same for the whole run (its constancy does), so the mask is true on a
prefix of the run and false after it. Then one test of the run's last element says whether
the whole run is in bounds: such runs take one vector access, and only the run the bound
cuts (and runs wholly outside) go element by element, each element predicated on its own
mask bit, exactly as the scalar path would.

Shapes, along runs of `width` registers on one dim:

- `const`: the same over the run (a splat, a broadcast dim, a mask of constancy >= width);
- `prefix`: true, then false (`offs < n`, `offs <= n`, `n > offs`, `n >= offs`);
- `suffix`: false, then true (`offs > n`, `offs >= n`, `n < offs`, `n <= offs`);
- `interval`: true on one interval (the `&` of the above: `lo <= offs & offs < hi`).

For every shape the run is wholly true exactly when its first and last elements are (the
test below uses the one that can be false: the last for a prefix, the first for a suffix).
Only signed compares qualify: an increasing run of indices can cross 2^32 - 1 -> 0 in the
unsigned order without any signed overflow. Like the axis analysis's own compare rule this
takes a contiguous run not to wrap in the signed order; the simulator re-checks every run
that takes the vector branch (`msl_assume_uniform`), so a wrong claim fails a test.
"""

from __future__ import annotations

from msltrans.ir.model import Value
from msltrans.ir.types import TensorType
from msltrans.lower.emitter import Emitter

SHAPES = ("const", "prefix", "suffix", "interval")
# arith.cmpi predicates: slt 2, sle 3, sgt 4, sge 5 (the unsigned ones stay out, see above)
_RISING_TRUE_FIRST = {2: "prefix", 3: "prefix", 4: "suffix", 5: "suffix"}
_FLIP = {"prefix": "suffix", "suffix": "prefix"}
_MAX_DEPTH = 16


def _and(a: str, b: str) -> str:
    if a == "const":
        return b
    if b == "const" or a == b:
        return a
    return "interval"


def _covers(fact: int, width: int) -> bool:
    """A chunk length of the axis facts (a power of two, or MAX) spans an aligned run."""
    return fact >= width and fact % width == 0


def mask_shape(em: Emitter, mask: Value, dim: int, width: int, depth: int = 0) -> str | None:
    """The shape of `mask` along aligned runs of `width` elements on `dim`, or None."""
    axis = em.axis
    if axis is None or depth > _MAX_DEPTH or not isinstance(mask.type, TensorType):
        return None
    if _covers(axis.info(mask).constancy[dim], width):
        return "const"
    op = em.producers.get(mask.id)
    if op is None:
        return None
    if op.name in ("ttg.convert_layout",):
        return mask_shape(em, op.operands[0], dim, width, depth + 1)
    if op.name == "tt.broadcast":
        src = op.operands[0]
        if isinstance(src.type, TensorType) and src.type.shape[dim] == 1:
            return "const"
        return mask_shape(em, src, dim, width, depth + 1)
    if op.name == "tt.expand_dims":
        axis_at = int(op.attrs["axis"])
        if dim == axis_at:
            return "const"
        return mask_shape(em, op.operands[0], dim - (dim > axis_at), width, depth + 1)
    if op.name == "arith.andi":
        a = mask_shape(em, op.operands[0], dim, width, depth + 1)
        b = mask_shape(em, op.operands[1], dim, width, depth + 1) if a else None
        return _and(a, b) if a and b else None
    if op.name == "arith.cmpi":
        shape = _RISING_TRUE_FIRST.get(int(op.attrs.get("predicate", -1)))
        if shape is None:
            return None
        lhs, rhs = (axis.info(v) for v in op.operands)
        if _covers(lhs.contiguity[dim], width) and _covers(rhs.constancy[dim], width):
            return shape
        if _covers(rhs.contiguity[dim], width) and _covers(lhs.constancy[dim], width):
            return _FLIP[shape]
    return None


def whole_run_test(em: Emitter, mask: Value, shape: str, reg: str, width: int) -> str:
    """The MSL condition that the mask holds on every element of the run starting at `reg`."""
    first = em.at(mask, reg)
    last = em.at(mask, f"{reg} + {width - 1}u")
    return {"const": first, "prefix": last, "suffix": first,
            "interval": f"{first} && {last}"}[shape]
