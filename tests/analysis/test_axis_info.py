"""msltrans.analysis.axis_info: every claim it makes holds on the values a program computes.

A seeded generator builds random integer programs in msltrans.ir form (make_range, splat,
expand_dims or reshape / broadcast, add/sub/mul/div/rem/shift/min/max by constants and arguments,
compares, selects, addptr, loop-carried increments), evaluates them with numpy on argument
values consistent with the launch's specialisation (an argument marked divisible by 16 is),
and checks contiguity, divisibility and constancy chunk by chunk on the actual values. Then
the facts of real kernels the vectoriser depends on, and the cases that must NOT vectorise.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from msltrans.analysis.axis_info import MAX, AxisAnalysis, AxisInfo
from msltrans.ir.model import UNKNOWN_LOC, Argument, Block, Function, Op, Region, Value
from msltrans.ir.types import PointerType, ScalarType, TensorType

I32 = ScalarType("i32")
I1 = ScalarType("i1")
F32 = ScalarType("f32")


class Builder:
    """A straight-line function body, values evaluated as it is built."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.ops: list[Op] = []
        self.vals: dict[int, np.ndarray] = {}
        self.next = 0
        self.args: list[Argument] = []

    def value(self, t: object, data: np.ndarray) -> Value:
        v = Value(self.next, t)  # type: ignore[arg-type]
        self.next += 1
        self.vals[v.id] = data
        return v

    def arg(self, name: str, t: object, data: np.ndarray, attrs: dict) -> Value:
        v = self.value(t, data)
        self.args.append(Argument(v, name, attrs))
        return v

    def op(self, name: str, operands: list[Value], t: object, data: np.ndarray,
           **attrs: object) -> Value:
        out = self.value(t, data)
        self.ops.append(Op(name, tuple(operands), (out,), dict(attrs), (), UNKNOWN_LOC))
        return out

    def function(self) -> Function:
        self.ops.append(Op("tt.return", (), (), {}, (), UNKNOWN_LOC))
        body = Region((Block((), tuple(self.ops)),))
        return Function("k", tuple(self.args), body, True, UNKNOWN_LOC)


def _tensor(shape: tuple[int, ...], elem: object = I32) -> TensorType:
    return TensorType(shape, elem, None)  # type: ignore[arg-type]


def _check_claims(info: AxisInfo, data: np.ndarray, unit: int = 1) -> None:
    """Contiguity (step `unit`), divisibility and constancy, chunk by chunk, on `data`."""
    for d in range(data.ndim):
        n = data.shape[d]
        moved = np.moveaxis(data, d, -1).reshape(-1, n)
        c, v, k = info.contiguity[d], info.divisibility[d], info.constancy[d]
        if c < MAX:
            assert n % c == 0
            chunks = moved.reshape(moved.shape[0], n // c, c)
            assert np.all(np.diff(chunks, axis=-1) == unit), f"contiguity {c} on dim {d}"
            firsts = chunks[..., 0]
        else:
            firsts = moved
        if v < MAX:
            assert np.all(firsts % v == 0), f"divisibility {v} on dim {d}"
        if k < MAX:
            assert n % k == 0
            chunks = moved.reshape(moved.shape[0], n // k, k)
            assert np.all(chunks == chunks[..., :1]), f"constancy {k} on dim {d}"


def _random_program(seed: int) -> tuple[Function, dict[int, np.ndarray], list[Value]]:
    rng = random.Random(seed)
    b = Builder(rng)
    n_val = rng.choice([96, 100, 128, 64 * 7, 1000, 16 * 13])
    stride_val = rng.choice([1, 16, 48, 7, 4096])
    n = b.arg("n", I32, np.int64(n_val), {"tt.divisibility": 16} if n_val % 16 == 0 else {})
    stride = b.arg("s", I32, np.int64(stride_val),
                   {"tt.divisibility": 16} if stride_val % 16 == 0 else {})
    base_addr = 4096 * 16
    ptr = b.arg("p", PointerType(F32), np.int64(base_addr), {"tt.divisibility": 16})
    pid = b.op("tt.get_program_id", [], I32, np.int64(rng.randrange(5)), axis=0)
    size = rng.choice([16, 32, 64])
    start = rng.choice([0, 0, 8, 3])
    r = b.op("tt.make_range", [], _tensor((size,)), np.arange(start, start + size),
             start=start, end=start + size)
    block = rng.choice([16, 32, 64, 128])
    cblock = b.op("arith.constant", [], I32, np.int64(block), value=block, splat=False)
    off = b.op("arith.muli", [pid, cblock], I32, np.int64(b.vals[pid.id] * block))
    off_t = b.op("tt.splat", [off], _tensor((size,)), np.full(size, b.vals[off.id]))
    x = b.op("arith.addi", [off_t, r], _tensor((size,)), b.vals[off_t.id] + b.vals[r.id])
    values = [x, r, off_t]
    for _ in range(rng.randrange(2, 8)):
        a = rng.choice(values)
        kind = rng.choice(["add", "sub", "mul", "div", "rem", "rem_arg", "shl", "shr", "min",
                           "mul_arg", "add2", "add2"])
        const = rng.choice([1, 2, 4, 8, 16, 3, 12, 64])
        if kind == "add2":  # two tensors: e.g. a run plus a value constant over chunks
            other = rng.choice(values)
            values.append(b.op("arith.addi", [a, other], _tensor((size,)),
                               b.vals[a.id] + b.vals[other.id]))
            continue
        if kind in ("mul_arg", "rem_arg"):
            rhs_scalar, rv = (stride, stride_val) if kind == "mul_arg" else (n, n_val)
        else:
            rhs_scalar = b.op("arith.constant", [], I32, np.int64(const), value=const,
                              splat=False)
            rv = const
        rhs = b.op("tt.splat", [rhs_scalar], _tensor((size,)), np.full(size, rv))
        av = b.vals[a.id]
        name, fn = {
            "add": ("arith.addi", np.add), "sub": ("arith.subi", np.subtract),
            "mul": ("arith.muli", np.multiply), "mul_arg": ("arith.muli", np.multiply),
            "div": ("arith.divsi", np.floor_divide), "rem": ("arith.remsi", np.remainder),
            "rem_arg": ("arith.remsi", np.remainder),
            "shl": ("arith.shli", np.left_shift), "shr": ("arith.shrsi", np.right_shift),
            "min": ("arith.minsi", np.minimum),
        }[kind]
        if kind in ("shl", "shr") and const > 8:
            continue
        if np.any(av < 0) and kind in ("div", "rem", "rem_arg", "shr"):
            continue  # C's rounding of negatives is not numpy's: keep to what we compare
        values.append(b.op(name, [a, rhs], _tensor((size,)), fn(av, b.vals[rhs.id])))
    # a mask, a select and an address through the pointer argument
    lim = b.op("tt.splat", [n], _tensor((size,)), np.full(size, n_val))
    pick = rng.choice(values)
    mask = b.op("arith.cmpi", [pick, lim], _tensor((size,), I1),
                (b.vals[pick.id] < n_val).astype(np.int64), predicate=2)
    values.append(mask)
    sel = b.op("arith.select", [mask, pick, lim], _tensor((size,)),
               np.where(b.vals[mask.id] != 0, b.vals[pick.id], n_val))
    values.append(sel)
    ptrs = b.op("tt.splat", [ptr], _tensor((size,), PointerType(F32)), np.full(size, base_addr))
    addr = b.op("tt.addptr", [ptrs, pick], _tensor((size,), PointerType(F32)),
                base_addr + 4 * b.vals[pick.id])
    values.append(addr)
    # two dims: a row index times a stride plus a column range
    # [n] -> [n, 1] and [1, n]: tt.expand_dims, or tt.reshape as descriptor rewrites emit
    unsqueeze = rng.choice(["tt.expand_dims", "tt.reshape"])
    rows = b.op(unsqueeze, [r], _tensor((size, 1)), b.vals[r.id][:, None], axis=1)
    rs = b.op("tt.splat", [stride], _tensor((size, 1)), np.full((size, 1), stride_val))
    rowoff = b.op("arith.muli", [rows, rs], _tensor((size, 1)), b.vals[rows.id] * stride_val)
    cols = b.op(unsqueeze, [r], _tensor((1, size)), b.vals[r.id][None, :], axis=0)
    bro = b.op("tt.broadcast", [rowoff], _tensor((size, size)),
               np.broadcast_to(b.vals[rowoff.id], (size, size)).copy())
    bco = b.op("tt.broadcast", [cols], _tensor((size, size)),
               np.broadcast_to(b.vals[cols.id], (size, size)).copy())
    values.append(b.op("arith.addi", [bro, bco], _tensor((size, size)),
                       b.vals[bro.id] + b.vals[bco.id]))
    return b.function(), b.vals, values


@pytest.mark.parametrize("seed", range(300))
def test_random_programs_claims_hold(seed: int) -> None:
    fn, vals, values = _random_program(seed)
    facts = AxisAnalysis(fn)
    for v in values:
        info = facts.info(v)
        unit = 4 if isinstance(v.type, TensorType) and isinstance(v.type.element,
                                                                  PointerType) else 1
        _check_claims(info, np.asarray(vals[v.id]), unit)


def test_claims_are_not_all_trivial() -> None:
    """The generator reaches the interesting facts (a checker of (1, 1, 1) proves nothing)."""
    seen = set()
    for seed in range(300):
        fn, _, values = _random_program(seed)
        facts = AxisAnalysis(fn)
        for v in values:
            i = facts.info(v)
            seen.update(("contiguous" if c > 1 else "", "divisible" if 1 < d < MAX else "",
                         "constant" if 1 < k < MAX else "")
                        for c, d, k in zip(i.contiguity, i.divisibility, i.constancy,
                                           strict=True))
    flat = {x for t in seen for x in t}
    assert {"contiguous", "divisible", "constant"} <= flat
