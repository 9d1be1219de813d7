"""Integer arith beyond + - * and bitwise: / % << >>, min/max, abs and bit counts.

LLVM calls division by zero, `INT_MIN / -1` and shifts by >= the bit width poison; Metal
does not document them and the simulator's x86 host traps on some. Each is emitted as an
explicit guard that reproduces what Triton's CUDA backend computes (docs/semantics.md,
measured in tests/data/cuda/elementwise_semantics.npz). Signedness is the op's: storage
types are signed, unsigned ops reinterpret through `msl_types.unsigned`.
"""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.lower import msl_types
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowers
from msltrans.lower.values import int_literal

BITS = {"char": 8, "short": 16, "int": 32, "long": 64}


def int_ctype(em: Emitter, op: Op) -> str:
    """The storage type of an integer op's result; i1 and non-integers are refused."""
    c = em.ctype(op.results[0])
    if c not in BITS:
        em.fail(f"{op.name} on {c}", "only i8, i16, i32 and i64 operands are supported")
    return c


def _all_ones_on_zero(c: str, dividend: str) -> str:
    """What NVIDIA gives for x / 0 and x % 0. 64-bit division is a software routine that
    takes a 32-bit path when the dividend's high word is zero, so there the result is the
    32-bit all-ones value zero-extended (0 / 0 == 4294967295); everywhere else all ones."""
    if c != "long":
        return f"{c}(-1)"
    return f"((ulong({dividend}) >> 32) == 0ul ? 4294967295L : -1L)"


def _signed_divrem(is_rem: bool):  # noqa: ANN202
    def lower(em: Emitter, op: Op) -> None:
        c = int_ctype(em, op)
        lo = int_literal(-(1 << (BITS[c] - 1)), c)
        # INT_MIN / -1 overflows (a trap on x86): NVIDIA wraps to INT_MIN, remainder 0.
        overflow = f"{c}(0)" if is_rem else lo
        symbol = "%" if is_rem else "/"
        em.elementwise(op, lambda a, b: (
            f"({b} == {c}(0) ? {_all_ones_on_zero(c, a)} : "
            f"({a} == {lo} && {b} == {c}(-1)) ? {overflow} : {c}({a} {symbol} {b}))"))
    return lower


def _unsigned_divrem(is_rem: bool):  # noqa: ANN202
    def lower(em: Emitter, op: Op) -> None:
        c = int_ctype(em, op)
        u = msl_types.unsigned(c)
        symbol = "%" if is_rem else "/"
        em.elementwise(op, lambda a, b: (
            f"({b} == {c}(0) ? {_all_ones_on_zero(c, a)} : {c}({u}({a}) {symbol} {u}({b})))"))
    return lower


@lowers("arith.ceildivsi")
def ceildivsi(em: Emitter, op: Op) -> None:
    # Rounds the quotient toward +inf: the truncated quotient, plus one when the division
    # is inexact and the exact quotient is positive (remainder and divisor of one sign).
    # Zero divisors and INT_MIN / -1 (poison in the IR) give what arith.divsi gives.
    c = int_ctype(em, op)
    lo = int_literal(-(1 << (BITS[c] - 1)), c)
    em.elementwise(op, lambda a, b: (
        f"({b} == {c}(0) ? {_all_ones_on_zero(c, a)} : "
        f"({a} == {lo} && {b} == {c}(-1)) ? {lo} : "
        f"{c}({a} / {b} + (({a} % {b} != {c}(0) && (({a} % {b}) ^ {b}) >= {c}(0)) ? 1 : 0)))"))


@lowers("arith.ceildivui")
def ceildivui(em: Emitter, op: Op) -> None:
    c = int_ctype(em, op)
    u = msl_types.unsigned(c)
    em.elementwise(op, lambda a, b: (
        f"({b} == {c}(0) ? {_all_ones_on_zero(c, a)} : "
        f"{c}({u}({a}) / {u}({b}) + ({u}({a}) % {u}({b}) != {u}(0) ? 1 : 0)))"))


lowers("arith.divsi")(_signed_divrem(False))
lowers("arith.remsi")(_signed_divrem(True))
lowers("arith.divui")(_unsigned_divrem(False))
lowers("arith.remui")(_unsigned_divrem(True))


# ---- shifts: the amount is unsigned; >= the bit width saturates (PTX clamps it) --------
# PTX takes a 32-bit amount: a 64-bit shift uses the amount's low word only (measured:
# x << 2**32 == x, x << (2**32 + 1) == x << 1; tests/data/cuda/*_extra.npz).

def _amount(c: str, b: str) -> str:
    return f"uint({b})" if c == "long" else f"{msl_types.unsigned(c)}({b})"


def _amount_too_big(c: str, b: str) -> str:
    return f"{_amount(c, b)} >= {BITS[c]}u"


def _logical_shift(symbol: str):  # noqa: ANN202
    def lower(em: Emitter, op: Op) -> None:
        c = int_ctype(em, op)
        u = msl_types.unsigned(c)
        # In the unsigned twin: left shifts of negative values are undefined in C++.
        em.elementwise(op, lambda a, b: (
            f"({_amount_too_big(c, b)} ? {c}(0) : {c}({u}({a}) {symbol} {_amount(c, b)}))"))
    return lower


lowers("arith.shli")(_logical_shift("<<"))
lowers("arith.shrui")(_logical_shift(">>"))


@lowers("arith.shrsi")
def shrsi(em: Emitter, op: Op) -> None:
    c = int_ctype(em, op)
    # Right shift of a negative signed value is arithmetic in Metal and clang.
    em.elementwise(op, lambda a, b: (
        f"({_amount_too_big(c, b)} ? ({a} < {c}(0) ? {c}(-1) : {c}(0)) : "
        f"{c}({a} >> {_amount(c, b)}))"))


# ---- min / max / abs -------------------------------------------------------------------

def _minmax(pick_less: bool, is_unsigned: bool):  # noqa: ANN202
    def lower(em: Emitter, op: Op) -> None:
        c = int_ctype(em, op)
        u = msl_types.unsigned(c) if is_unsigned else ""
        em.elementwise(op, lambda a, b: (
            f"({u}({a}) < {u}({b}) ? {a if pick_less else b} : {b if pick_less else a})"))
    return lower


lowers("arith.minsi")(_minmax(True, False))
lowers("arith.maxsi")(_minmax(False, False))
lowers("arith.minui")(_minmax(True, True))
lowers("arith.maxui")(_minmax(False, True))


@lowers("math.absi")
def absi(em: Emitter, op: Op) -> None:
    c = int_ctype(em, op)
    u = msl_types.unsigned(c)
    # abs(INT_MIN) wraps to INT_MIN (llvm.abs with is_int_min_poison = false).
    em.elementwise(op, lambda a: f"({a} < {c}(0) ? {c}({u}(0) - {u}({a})) : {a})")


# ---- bit counts: Metal's clz/ctz return the bit width for 0, as math.ctlz/cttz say -----

def _bit_count(fn: str):  # noqa: ANN202
    def lower(em: Emitter, op: Op) -> None:
        c = int_ctype(em, op)
        u = msl_types.unsigned(c)
        if fn == "popcount":
            em.elementwise(op, lambda a: f"{c}(popcount({u}({a})))")
        else:  # explicit zero case: Metal documents it, but no need to trust it
            em.elementwise(op, lambda a: (
                f"({a} == {c}(0) ? {c}({BITS[c]}) : {c}({fn}({u}({a}))))"))
    return lower


lowers("math.ctlz")(_bit_count("clz"))
lowers("math.cttz")(_bit_count("ctz"))
lowers("math.ctpop")(_bit_count("popcount"))
