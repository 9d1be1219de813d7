"""arith: constants, + - * /, bitwise, comparisons, select, casts (the tutorial-01 set).

Integer + - * wrap (two's complement) like LLVM: computed in the unsigned twin of the
storage type, since signed overflow is undefined behaviour in MSL/C++.
"""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.ir.types import ScalarType, TensorType
from msltrans.lower import msl_types
from msltrans.lower.elementwise.fp_int import float_to_int
from msltrans.lower.elementwise.ops_arith_float import fma_function
from msltrans.lower.elementwise.ops_fp8 import fp8_literal, fp8_name
from msltrans.lower.emitter import LANE, REG, WARP, Emitter
from msltrans.lower.registry import lowers
from msltrans.lower.support import need_support
from msltrans.lower.values import literal

# ---- constants -----------------------------------------------------------------------


@lowers("arith.constant")
def constant(em: Emitter, op: Op) -> None:
    out = op.results[0]
    c = em.ctype(out)
    value = op.attrs.get("value")
    if value is None:
        em.fail("constant payload not readable (hex blob or unknown form)",
                "write the constant with tl.full or arithmetic")
    lit = literal
    if fp8_name(out.type) is not None:  # fp8 constants are bytes (ops_fp8)
        def lit(v: object, _c: str) -> str:
            return fp8_literal(em, v, out.type)
    if not isinstance(value, tuple):
        em.elementwise(op, lambda: lit(value, c))
        return
    t = out.type
    assert isinstance(t, TensorType)
    if len(value) != t.numel:
        em.fail(f"dense constant with {len(value)} values for {t.numel} elements")
    table = em.fresh((out.name or "dense") + "_table")
    em.prelude.append(f"constant {c} {table}[{t.numel}] = {{"
                      + ", ".join(lit(v, c) for v in value) + "};")
    L = em.layout(out)
    em.elementwise(op, lambda: f"{table}[{L.flat_fn}({REG}, {LANE}, {WARP})]")


# ---- arithmetic ----------------------------------------------------------------------

def _storage(em: Emitter, op: Op) -> str:
    return em.ctype(op.results[0])


def _wrapping(symbol: str, bool_form: str):  # noqa: ANN202
    def lower(em: Emitter, op: Op) -> None:
        c = _storage(em, op)
        if c == "bool":
            em.elementwise(op, lambda a, b: bool_form.format(a=a, b=b))
            return
        u = msl_types.unsigned(c)
        em.elementwise(op, lambda a, b: f"{c}({u}({a}) {symbol} {u}({b}))")
    return lower


lowers("arith.addi")(_wrapping("+", "{a} != {b}"))
lowers("arith.subi")(_wrapping("-", "{a} != {b}"))
lowers("arith.muli")(_wrapping("*", "{a} && {b}"))


def _float_binary(symbol: str):  # noqa: ANN202
    def lower(em: Emitter, op: Op) -> None:
        em.elementwise(op, lambda a, b: f"{a} {symbol} {b}")
    return lower


# IEEE + - * per op: the simulator compiles without contraction, and Metal's safe math
# (torch.mps.compile_shader) is correctly rounded for these.
lowers("arith.mulf")(_float_binary("*"))


def _fusable(em: Emitter, op: Op, index: int) -> Op | None:
    if not em.enable_fp_fusion or em.ctype(op.results[0]) not in ("float", "half", "bfloat"):
        return None
    return em.single_use_producer(op.operands[index], "arith.mulf")


@lowers("arith.addf", "arith.subf")
def add_sub_f(em: Emitter, op: Op) -> None:
    """a*b + c → fma(a, b, c) when the product has no other use (Triton's fp fusion);
    LLVM prefers the left product when both sides are fusable, and so do we."""
    symbol = "+" if op.name == "arith.addf" else "-"
    for index in (0, 1):
        mul = _fusable(em, op, index)
        if mul is None:
            continue
        a, b = (em.at(v) for v in mul.operands)
        other = em.at(op.operands[1 - index])
        fma = fma_function(em, em.ctype(op.results[0]))
        if index == 0:
            c = other if symbol == "+" else f"-{other}"
            expr = f"{fma}({a}, {b}, {c})"
        else:
            a = a if symbol == "+" else f"-{a}"
            expr = f"{fma}({a}, {b}, {other})"
        em.elementwise(op, lambda *_, e=expr: e)
        return
    em.elementwise(op, lambda x, y: f"{x} {symbol} {y}")
@lowers("arith.divf")
def divf(em: Emitter, op: Op) -> None:
    """fp32 `/` is Triton's approximate division (NVIDIA's div.full, 2 ulp): Metal's
    fast::divide (2.5 ulp, MSL Table 8.2). `tl.div_rn` stays correctly rounded. 16-bit
    divisions keep the IEEE `/` of their type."""
    if em.ctype(op.results[0]) == "float":
        em.elementwise(op, lambda a, b: f"fast::divide({a}, {b})")
    else:
        em.elementwise(op, lambda a, b: f"{a} / {b}")


def _bitwise(symbol: str):  # noqa: ANN202
    def lower(em: Emitter, op: Op) -> None:
        c = _storage(em, op)
        if c == "bool":
            em.elementwise(op, lambda a, b: f"bool({a} {symbol} {b})")
        else:
            em.elementwise(op, lambda a, b: f"{c}({a} {symbol} {b})")
    return lower


lowers("arith.andi")(_bitwise("&"))
lowers("arith.ori")(_bitwise("|"))
lowers("arith.xori")(_bitwise("^"))


# ---- comparisons and select ----------------------------------------------------------

_CMPI = {0: ("==", False), 1: ("!=", False), 2: ("<", False), 3: ("<=", False),
         4: (">", False), 5: (">=", False), 6: ("<", True), 7: ("<=", True),
         8: (">", True), 9: (">=", True)}


@lowers("arith.cmpi")
def cmpi(em: Emitter, op: Op) -> None:
    pred = op.attrs.get("predicate")
    if pred not in _CMPI:
        em.fail(f"cmpi predicate {pred!r}")
    symbol, is_unsigned = _CMPI[pred]
    c = em.ctype(op.operands[0])
    if is_unsigned and c != "bool":
        u = msl_types.unsigned(c)
        em.elementwise(op, lambda a, b: f"{u}({a}) {symbol} {u}({b})")
    elif c == "bool" and symbol not in ("==", "!="):
        # i1 is signed -1/0 for slt..sge, unsigned 1/0 for ult..uge.
        conv = "int" if is_unsigned else "-int"
        em.elementwise(op, lambda a, b: f"{conv}({a}) {symbol} {conv}({b})")
    else:
        em.elementwise(op, lambda a, b: f"{a} {symbol} {b}")


# Ordered predicates are false on NaN, unordered ones true; C comparisons are ordered
# except != (which is une), so the unordered forms negate the opposite ordered test.
_CMPF = {
    0: "false", 1: "{a} == {b}", 2: "{a} > {b}", 3: "{a} >= {b}", 4: "{a} < {b}",
    5: "{a} <= {b}", 6: "({a} < {b} || {a} > {b})", 7: "({a} == {a} && {b} == {b})",
    8: "!({a} < {b} || {a} > {b})", 9: "!({a} <= {b})", 10: "!({a} < {b})",
    11: "!({a} >= {b})", 12: "!({a} > {b})", 13: "{a} != {b}",
    14: "({a} != {a} || {b} != {b})", 15: "true",
}


@lowers("arith.cmpf")
def cmpf(em: Emitter, op: Op) -> None:
    pred = op.attrs.get("predicate")
    if pred not in _CMPF:
        em.fail(f"cmpf predicate {pred!r}")
    form = _CMPF[pred]
    em.elementwise(op, lambda a, b: form.format(a=a, b=b))


@lowers("arith.select")
def select(em: Emitter, op: Op) -> None:
    em.elementwise(op, lambda cond, a, b: f"{cond} ? {a} : {b}")


# ---- casts ---------------------------------------------------------------------------

def _in_out(em: Emitter, op: Op) -> tuple[str, str]:
    return em.ctype(op.operands[0]), em.ctype(op.results[0])


@lowers("arith.extsi", "arith.index_cast")
def extsi(em: Emitter, op: Op) -> None:
    src, dst = _in_out(em, op)
    if src == "bool":
        em.elementwise(op, lambda a: f"{dst}(-int({a}))")  # i1 true sign-extends to -1
    elif dst == "bool":
        em.elementwise(op, lambda a: f"bool({a} & 1)")  # index_cast down to i1 truncates
    else:
        em.elementwise(op, lambda a: f"{dst}({a})")


@lowers("arith.extui", "arith.index_castui")
def extui(em: Emitter, op: Op) -> None:
    src, dst = _in_out(em, op)
    if src == "bool":
        em.elementwise(op, lambda a: f"{dst}({a})")
    elif dst == "bool":
        em.elementwise(op, lambda a: f"bool({a} & 1)")
    else:
        u = msl_types.unsigned(src)
        em.elementwise(op, lambda a: f"{dst}({u}({a}))")


@lowers("arith.trunci")
def trunci(em: Emitter, op: Op) -> None:
    src, dst = _in_out(em, op)
    if dst == "bool":
        em.elementwise(op, lambda a: f"bool({a} & 1)")
    else:
        u = msl_types.unsigned(dst)
        em.elementwise(op, lambda a: f"{dst}({u}({a}))")


@lowers("arith.sitofp")
def sitofp(em: Emitter, op: Op) -> None:
    src, dst = _in_out(em, op)
    if src == "bool":
        em.elementwise(op, lambda a: f"{dst}(-int({a}))")
    elif dst == "bfloat" and src in ("int", "long"):  # one rounding, not two via float
        need_support(em)
        em.elementwise(op, lambda a: f"msl_i64_to_bf16(long({a}))")
    else:
        em.elementwise(op, lambda a: f"{dst}({a})")


@lowers("arith.uitofp")
def uitofp(em: Emitter, op: Op) -> None:
    src, dst = _in_out(em, op)
    if src == "bool":
        em.elementwise(op, lambda a: f"{dst}({a})")
    else:
        u = msl_types.unsigned(src)
        if dst == "bfloat" and src in ("int", "long"):  # one rounding, not two via float
            need_support(em)
            em.elementwise(op, lambda a: f"msl_u64_to_bf16(ulong({u}({a})))")
        else:
            em.elementwise(op, lambda a: f"{dst}({u}({a}))")


def _float_to_int(is_unsigned: bool):  # noqa: ANN202
    def lower(em: Emitter, op: Op) -> None:
        _, dst = _in_out(em, op)
        if dst == "bool":
            em.fail("float to i1 conversion", "compare with 0 instead")
        # Poison (NaN, out of range) in the IR: follow NVIDIA's saturation (fp_int).
        src = em.ctype(op.operands[0])
        em.elementwise(op, lambda a: float_to_int(src, dst, is_unsigned, a))
    return lower


lowers("arith.fptosi")(_float_to_int(False))
lowers("arith.fptoui")(_float_to_int(True))


@lowers("arith.extf", "arith.truncf")
def float_resize(em: Emitter, op: Op) -> None:
    src_t = msl_types.element(op.operands[0].type)
    dst_t = msl_types.element(op.results[0].type)
    assert isinstance(src_t, ScalarType) and isinstance(dst_t, ScalarType)
    if op.name == "arith.truncf" and op.attrs.get("roundingmode") not in (None, "to_nearest_even"):
        em.fail(f"truncf rounding mode {op.attrs['roundingmode']}", "only round-to-nearest-even")
    from msltrans.lower.dot.state import take_prelowered

    if take_prelowered(em, op):
        em.line("// done by the K loop's epilogue: it read the accumulator back rounded")
        return
    _, dst = _in_out(em, op)
    if {src_t.name, dst_t.name} == {"f16", "bf16"}:
        em.elementwise(op, lambda a: f"{dst}(float({a}))")  # exact via f32, no direct cast
    else:
        em.elementwise(op, lambda a: f"{dst}({a})")  # MSL rounds to nearest even
