"""Axis facts about integer and pointer values: contiguity, divisibility, constancy.

The same three facts Triton's AxisInfo computes (and that Triton's CUDA backend vectorises
from), derived here from `msltrans.ir` alone. For a value of rank r, along each dim d:

- contiguity[d] = c: split dim d into chunks of c consecutive indices (at multiples of c);
  within a chunk the values increase by exactly 1 (pointers: by one element);
- divisibility[d] = v: the first value of every such chunk is a multiple of v (pointers: the
  address, in bytes); for c = 1 that is every value;
- constancy[d] = k: within chunks of k consecutive indices along d, all values are equal.

Every number is a power of two or MAX (unknown-but-unconstrained, for values nothing has
reached yet). Each rule below keeps these claims true; a value no rule covers gets the
pessimistic facts (1, 1, 1). Scalars are rank 1 with one element. Hints the user wrote
(`tl.multiple_of`, `tl.max_contiguous`, `tl.max_constancy` → `tt.divisibility`,
`tt.contiguity`, `tt.constancy` on the op) and the launcher's specialisation
(`tt.divisibility = 16` on arguments) are trusted as Triton trusts them.

The lowering uses the facts to issue one 16-byte access per aligned contiguous run of
registers (ops_memory.py); the simulator re-checks every such run at run time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from msltrans.ir.model import Block, Function, Op, Value
from msltrans.ir.types import PointerType, ScalarType, TensorType

MAX = 1 << 62  # "anything": the lattice top, as Triton's kMaxDivisor


def pow2_divisor(value: int) -> int:
    """The largest power of two dividing `value` (MAX for 0)."""
    if value == 0:
        return MAX
    return min(value & -value, MAX)


def gcd(*values: int) -> int:
    out = 0
    for v in values:
        out = math.gcd(out, v)
    return out or MAX


@dataclass(frozen=True)
class AxisInfo:
    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    constant: int | None = None  # the value, when every element is one known integer

    @property
    def rank(self) -> int:
        return len(self.contiguity)

    @staticmethod
    def unknown(rank: int) -> AxisInfo:
        return AxisInfo((1,) * rank, (1,) * rank, (1,) * rank)

    @staticmethod
    def top(rank: int) -> AxisInfo:
        return AxisInfo((MAX,) * rank, (MAX,) * rank, (MAX,) * rank)

    def join(self, other: AxisInfo) -> AxisInfo:
        """What holds for both (loop-carried values, if/else results)."""
        contig = tuple(map(gcd, self.contiguity, other.contiguity))
        div = tuple(gcd(div_at(self, d, c), div_at(other, d, c)) for d, c in enumerate(contig))
        same = self.constant if self.constant == other.constant else None
        return AxisInfo(contig, div, tuple(map(gcd, self.constancy, other.constancy)), same)


def div_at(a: AxisInfo, d: int, chunk: int) -> int:
    """What divides the value at the start of every `chunk`-long group along d (groups at
    multiples of `chunk`). Inside one of `a`'s contiguous runs the values step by 1, so a
    start that is not a run start keeps only the divisibility by the chunk length itself:
    a result whose runs are shorter than an operand's must not inherit that operand's
    divisibility as it is (Triton's rules do in places; these do not)."""
    c, v = a.contiguity[d], a.divisibility[d]
    if c == MAX or chunk >= c:
        return v
    return gcd(v, chunk)


def _shape(v: Value) -> tuple[int, ...]:
    return v.type.shape if isinstance(v.type, TensorType) else (1,)


def _element(v: Value) -> object:
    return v.type.element if isinstance(v.type, TensorType) else v.type


def tracked(v: Value) -> bool:
    """Integers and pointers carry axis facts; floats and others do not."""
    e = _element(v)
    return isinstance(e, PointerType) or (isinstance(e, ScalarType) and e.is_int)


def _pointee_bytes(v: Value) -> int:
    e = _element(v)
    if isinstance(e, PointerType) and isinstance(e.pointee, ScalarType):
        return max(1, e.pointee.bits // 8)
    return 1


def _hint(text: object) -> tuple[int, ...] | None:
    """`dense<8> : tensor<1xi32>`, `dense<[8, 1]> : ...` or a plain int → the numbers."""
    if isinstance(text, int):
        return (text,)
    if not isinstance(text, str):
        return None
    m = re.search(r"dense<\[?([-\d,\s]+)\]?>", text)
    if m:
        return tuple(int(x) for x in m.group(1).split(","))
    return (int(text),) if text.strip().lstrip("-").isdigit() else None


def _with_hints(info: AxisInfo, attrs: dict, rank: int) -> AxisInfo:
    fields = {"contiguity": info.contiguity, "divisibility": info.divisibility,
              "constancy": info.constancy}
    for key in fields:
        h = _hint(attrs.get(f"tt.{key}"))
        if h is not None:
            fields[key] = h * rank if len(h) == 1 else h
    return AxisInfo(fields["contiguity"], fields["divisibility"], fields["constancy"],
                    info.constant)


# ---- the rules (one per op family) -------------------------------------------------------
Rule = Callable[[Op, list[AxisInfo]], AxisInfo]
_RULES: dict[str, Rule] = {}


def _rule(*names: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        for n in names:
            _RULES[n] = fn
        return fn
    return deco


@_rule("arith.constant")
def _constant(op: Op, _: list[AxisInfo]) -> AxisInfo:
    out = op.results[0]
    value = op.attrs.get("value")
    if isinstance(value, bool):
        value = int(value)
    shape = _shape(out)
    if not isinstance(value, int):
        return AxisInfo.unknown(len(shape))
    return AxisInfo((1,) * len(shape), (pow2_divisor(value),) * len(shape), shape, value)


@_rule("tt.make_range")
def _make_range(op: Op, _: list[AxisInfo]) -> AxisInfo:
    start, end = int(op.attrs["start"]), int(op.attrs["end"])
    return AxisInfo((end - start,), (pow2_divisor(start),), (1,))


@_rule("tt.splat")
def _splat(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    shape = _shape(op.results[0])
    return AxisInfo((1,) * len(shape), (ins[0].divisibility[0],) * len(shape), shape,
                    ins[0].constant)


@_rule("tt.broadcast")
def _broadcast(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    src, out = _shape(op.operands[0]), _shape(op.results[0])
    a = ins[0]
    return AxisInfo(
        tuple(1 if s == 1 else a.contiguity[d] for d, s in enumerate(src)),
        a.divisibility,
        tuple(n if s == 1 else a.constancy[d]
              for d, (s, n) in enumerate(zip(src, out, strict=True))),
        a.constant)


@_rule("tt.expand_dims")
def _expand_dims(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    a, axis = ins[0], int(op.attrs["axis"])
    if a.constant is not None:
        new_div = pow2_divisor(a.constant)
    else:  # every element is a multiple of what divides all of them
        new_div = gcd(*(1 if a.contiguity[d] > 1 else a.divisibility[d] for d in range(a.rank)))

    def ins_at(t: tuple[int, ...], v: int) -> tuple[int, ...]:
        return t[:axis] + (v,) + t[axis:]

    return AxisInfo(ins_at(a.contiguity, 1), ins_at(a.divisibility, new_div),
                    ins_at(a.constancy, 1), a.constant)


@_rule("tt.reshape")
def _reshape(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    """Only a reshape that inserts or drops size-1 dims (what tensor-descriptor rewrites and
    `x[:, None]`-style code produce) keeps facts: the other dims keep theirs, an inserted dim
    is one element long (as in tt.expand_dims). Any other reshape: unknown."""
    src, out = _shape(op.operands[0]), _shape(op.results[0])
    a = ins[0]
    if [s for s in src if s != 1] != [s for s in out if s != 1]:
        return AxisInfo.unknown(len(out))
    if a.constant is not None:
        new_div = pow2_divisor(a.constant)
    else:
        new_div = gcd(*(1 if a.contiguity[d] > 1 else a.divisibility[d] for d in range(a.rank)))
    kept = [d for d, s in enumerate(src) if s != 1]
    contig, div, const = [], [], []
    i = 0
    for s in out:
        if s == 1:
            contig.append(1)
            div.append(new_div)
            const.append(1)
            continue
        d = kept[i]
        i += 1
        contig.append(a.contiguity[d])
        div.append(a.divisibility[d])
        const.append(a.constancy[d])
    return AxisInfo(tuple(contig), tuple(div), tuple(const), a.constant)


@_rule("arith.extsi", "arith.extui", "arith.trunci", "ttg.convert_layout", "arith.index_cast",
       "arith.index_castui")
def _same(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    return ins[0]


def _binary(op: Op, ins: list[AxisInfo], contiguity: Callable[[int], int],
            divisibility: Callable[[int], int], constancy: Callable[[int], int],
            constant: int | None) -> AxisInfo:
    rank = ins[0].rank
    if constant is not None:
        return AxisInfo((1,) * rank, (pow2_divisor(constant),) * rank,
                        tuple(max(ins[0].constancy[d], ins[1].constancy[d]) for d in range(rank)),
                        constant)
    return AxisInfo(tuple(contiguity(d) for d in range(rank)),
                    tuple(divisibility(d) for d in range(rank)),
                    tuple(constancy(d) for d in range(rank)))


def _both(a: AxisInfo, b: AxisInfo, f: Callable[[int, int], int]) -> int | None:
    return f(a.constant, b.constant) if a.constant is not None and b.constant is not None \
        else None


@_rule("arith.addi", "arith.subi", "tt.addptr")
def _add(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    a, b = ins
    scale = _pointee_bytes(op.results[0]) if op.name == "tt.addptr" else 1
    sub = op.name == "arith.subi"

    def contig(d: int) -> int:
        if sub:  # only an increasing lhs minus a constant stays increasing
            return gcd(a.contiguity[d], b.constancy[d])
        return max(gcd(a.constancy[d], b.contiguity[d]), gcd(a.contiguity[d], b.constancy[d]))

    def div(d: int) -> int:
        c = contig(d)
        return gcd(div_at(a, d, c), min(div_at(b, d, c) * scale, MAX))

    const = None if op.name == "tt.addptr" else _both(
        a, b, (lambda x, y: x - y) if sub else (lambda x, y: x + y))
    return _binary(op, ins, contig, div, lambda d: gcd(a.constancy[d], b.constancy[d]), const)


@_rule("arith.muli")
def _mul(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    a, b = ins

    def contig(d: int) -> int:
        return max(a.contiguity[d] if b.constant == 1 else 1,
                   b.contiguity[d] if a.constant == 1 else 1)

    def div(d: int) -> int:
        # [2^n, 2^n + 1, ...] as a whole is divisible by 1 only
        da = 1 if a.contiguity[d] > 1 and b.constant != 1 else a.divisibility[d]
        db = 1 if b.contiguity[d] > 1 and a.constant != 1 else b.divisibility[d]
        return min(da * db, MAX)

    return _binary(op, ins, contig, div, lambda d: gcd(a.constancy[d], b.constancy[d]),
                   _both(a, b, lambda x, y: x * y))


def _full(shape: tuple[int, ...], d: int, info: AxisInfo, what: str) -> bool:
    return getattr(info, what)[d] == shape[d] or getattr(info, what)[d] == MAX


def _trunc_div(x: int, y: int) -> int | None:
    """C's integer division (toward zero); None for a zero divisor or negative operands,
    whose unsigned reading we do not fold."""
    if y <= 0 or x < 0:
        return None
    return x // y


@_rule("arith.divsi", "arith.divui")
def _div(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    a, b = ins
    shape = _shape(op.results[0])

    def const(d: int) -> int:
        k = gcd(a.constancy[d], b.constancy[d])
        if _full(shape, d, a, "contiguity") and _full(shape, d, b, "constancy"):
            k = max(k, gcd(a.contiguity[d], a.divisibility[d], b.divisibility[d]))
        return k

    def div(d: int) -> int:
        if a.constant == 0 or b.constant == 1:
            return a.divisibility[d]
        if b.constant is not None and b.constant > 0 and b.constant & (b.constant - 1) == 0 \
                and a.contiguity[d] == 1:
            return max(1, a.divisibility[d] // b.constant)
        return 1

    both = _both(a, b, _trunc_div)
    return _binary(op, ins, lambda d: a.contiguity[d] if b.constant == 1 else 1, div, const,
                   both)


@_rule("arith.remsi", "arith.remui")
def _rem(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    a, b = ins
    shape = _shape(op.results[0])

    def contig(d: int) -> int:
        if _full(shape, d, a, "contiguity") and _full(shape, d, b, "constancy"):
            return gcd(a.contiguity[d], a.divisibility[d], b.divisibility[d])
        return 1

    def div(d: int) -> int:
        if b.constancy[d] == 1:
            return 1
        c = contig(d)
        return gcd(div_at(a, d, c), div_at(b, d, 1))

    def const(d: int) -> int:
        return shape[d] if b.constant == 1 else gcd(a.constancy[d], b.constancy[d])

    both = _both(a, b, lambda x, y: x - _trunc_div(x, y) * y if _trunc_div(x, y) is not None
                 else None)
    if b.constant == 1:
        both = 0
    return _binary(op, ins, contig, div, const, both)


@_rule("arith.andi", "arith.ori", "arith.xori")
def _logical(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    a, b = ins
    fn = {"arith.andi": lambda x, y: x & y, "arith.ori": lambda x, y: x | y,
          "arith.xori": lambda x, y: x ^ y}[op.name]
    return _binary(op, ins, lambda d: 1, lambda d: 1,
                   lambda d: gcd(a.constancy[d], b.constancy[d]), _both(a, b, fn))


def _shift(op: Op, ins: list[AxisInfo], scale: Callable[[int, int], int],
           fold: Callable[[int, int], int | None] | None) -> AxisInfo:
    """A shift by a constant: contiguity survives only a shift by 0; divisibility follows
    `scale(divisibility, shift)` (a run of consecutive values has divisibility 1 first)."""
    a, b = ins
    shift = b.constant if b.constant is not None and 0 <= b.constant < 62 else None

    def div(d: int) -> int:
        if shift is None:
            return 1
        da = 1 if a.contiguity[d] > 1 and shift else a.divisibility[d]
        return scale(da, shift)

    return _binary(op, ins, lambda d: a.contiguity[d] if shift == 0 else 1, div,
                   lambda d: gcd(a.constancy[d], b.constancy[d]),
                   _both(a, b, fold) if fold is not None else None)


@_rule("arith.shli")
def _shl(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    return _shift(op, ins, lambda da, k: min(da << k, MAX),
                  lambda x, y: x << y if 0 <= y < 64 else None)


@_rule("arith.shrsi", "arith.shrui")
def _shr(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    return _shift(op, ins, lambda da, k: max(1, da >> k) if da != MAX else MAX, None)


@_rule("arith.maxsi", "arith.maxui", "arith.minsi", "arith.minui")
def _minmax(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    a, b = ins
    if a.constant is not None and b.constant is not None:
        pick = max if "max" in op.name else min
        return AxisInfo((1,) * a.rank, (1,) * a.rank, (1,) * a.rank,
                        pick(a.constant, b.constant))
    joined = a.join(b)
    return AxisInfo(joined.contiguity, joined.divisibility, joined.constancy)


_LT, _LE, _GT, _GE = {2, 6}, {3, 7}, {4, 8}, {5, 9}  # slt/ult, sle/ule, sgt/ugt, sge/uge


@_rule("arith.cmpi")
def _cmpi(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    a, b = ins
    pred = int(op.attrs.get("predicate", -1))
    shape = _shape(op.results[0])
    rank = a.rank
    if a.constant is not None and b.constant is not None:
        return AxisInfo((1,) * rank, (1,) * rank, a.constancy, None)
    const = []
    for d in range(rank):
        k = gcd(a.constancy[d], b.constancy[d])
        # A contiguous run compared with a constant flips at most once, and only where the
        # run crosses a multiple of what divides both: chunks of that length agree.
        if pred in _GT | _LE and _full(shape, d, a, "constancy"):
            k = max(k, gcd(b.contiguity[d], a.divisibility[d], b.divisibility[d]))
        elif pred in _LT | _GE and _full(shape, d, b, "constancy"):
            k = max(k, gcd(a.contiguity[d], a.divisibility[d], b.divisibility[d]))
        const.append(k)
    return AxisInfo((1,) * rank, (1,) * rank, tuple(const))


@_rule("arith.select")
def _select(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    c, a, b = ins
    if c.constant is not None:
        return a if c.constant else b
    rank = a.rank
    scalar_cond = not isinstance(op.operands[0].type, TensorType)
    contig, const = [], []
    for d in range(rank):
        cc = MAX if scalar_cond else c.constancy[d]
        contig.append(gcd(a.contiguity[d], b.contiguity[d], cc))
        const.append(gcd(a.constancy[d], b.constancy[d], cc))
    same = a.constant if a.constant is not None and a.constant == b.constant else None
    div = tuple(gcd(div_at(a, d, c), div_at(b, d, c)) for d, c in enumerate(contig))
    return AxisInfo(tuple(contig), div, tuple(const), same)


@_rule("tt.load")
def _load(op: Op, ins: list[AxisInfo]) -> AxisInfo:
    rank = ins[0].rank
    mask = ins[1] if len(ins) > 1 else None
    const = tuple(gcd(ins[0].constancy[d], mask.constancy[d] if mask else MAX)
                  for d in range(rank))
    return AxisInfo((1,) * rank, (1,) * rank, const)


# ---- the walk ----------------------------------------------------------------------------
class AxisAnalysis:
    """Facts for every tracked value of one function (`info(v)`; untracked → unknown)."""

    def __init__(self, fn: Function, callees: Iterable[Function] = ()) -> None:
        self.facts: dict[int, AxisInfo] = {}
        for arg in fn.args:
            info = AxisInfo.unknown(len(_shape(arg.value)))
            self.facts[arg.value.id] = _with_hints(info, arg.attrs, info.rank)
        for block in fn.body.blocks:
            for a in block.args:
                self.facts.setdefault(a.id, AxisInfo.unknown(len(_shape(a))))
            self._block(block)

    def info(self, v: Value) -> AxisInfo:
        return self.facts.get(v.id) or AxisInfo.unknown(len(_shape(v)))

    def _set(self, v: Value, info: AxisInfo) -> None:
        self.facts[v.id] = info

    def _block(self, block: Block) -> None:
        for op in block.ops:
            self._op(op)

    def _op(self, op: Op) -> None:
        if op.name == "scf.for":
            self._for(op)
            return
        if op.name == "scf.if":
            self._if(op)
            return
        for region in op.regions:  # other region ops: facts inside, nothing carried out
            for block in region.blocks:
                for a in block.args:
                    self._set(a, AxisInfo.unknown(len(_shape(a))))
                self._block(block)
        rule = _RULES.get(op.name)
        for r in op.results:
            rank = len(_shape(r))
            if rule is None or not tracked(r):
                info = AxisInfo.unknown(rank)
            else:
                try:
                    info = rule(op, [self.info(o) for o in op.operands])
                except (KeyError, ValueError, ZeroDivisionError, TypeError):
                    info = AxisInfo.unknown(rank)
                if info.rank != rank:
                    info = AxisInfo.unknown(rank)
            self._set(r, _with_hints(info, op.attrs, rank))

    def _for(self, op: Op) -> None:
        lb, _, step, *inits = op.operands
        body = op.regions[0].blocks[0]
        iv, carried = body.args[0], body.args[1:]
        self._set(iv, AxisInfo((1,), (gcd(self.info(lb).divisibility[0],
                                          self.info(step).divisibility[0]),), (1,)))
        state = [self.info(v) for v in inits]
        for _ in range(8):  # facts only weaken (gcd), so this settles in a few rounds
            for a, s in zip(carried, state, strict=True):
                self._set(a, s)
            self._block(body)
            yields = body.ops[-1].operands if body.ops and body.ops[-1].name == "scf.yield" \
                else ()
            new = [s.join(self.info(y)) for s, y in zip(state, yields, strict=False)]
            new += state[len(new):]
            if new == state:
                break
            state = new
        else:  # did not settle: claim nothing about the carried values
            state = [AxisInfo.unknown(s.rank) for s in state]
            for a, s in zip(carried, state, strict=True):
                self._set(a, s)
            self._block(body)
        for r, s in zip(op.results, state, strict=False):
            self._set(r, s)

    def _if(self, op: Op) -> None:
        outs: list[list[AxisInfo]] = []
        for region in op.regions:
            for block in region.blocks:
                self._block(block)
                term = block.ops[-1] if block.ops else None
                if term is not None and term.name == "scf.yield":
                    outs.append([self.info(v) for v in term.operands])
        for i, r in enumerate(op.results):
            infos = [o[i] for o in outs if i < len(o)]
            if len(infos) == 2:
                self._set(r, infos[0].join(infos[1]))
            else:
                self._set(r, AxisInfo.unknown(len(_shape(r))))
