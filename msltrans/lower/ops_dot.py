"""tt.dot: D = A @ B + C with one meaning on every path.

Each output element is the chain acc = fma(a[i, k], b[k, j], acc) over k = 0, 1, ..., K-1 in
increasing order, starting from C's element; a K loop carries the accumulator, so the whole
sum is one in-order chain (Triton's FMA path on NVIDIA rounds the same way: fp32 ieee dots
are bit-identical across vendors).

- fp32 inputs: fp32 fma chain. fp16 / bf16 inputs: each product is formed in fp32 (exact:
  11+11 and 8+8 significand bits fit in 24) and accumulated in fp32 by the same chain; with
  an fp16 accumulator (out_dtype=float16) C is widened to fp32, the chain runs in fp32 and the
  result is rounded to fp16 once at the end of each tt.dot (NVIDIA's FMA path rounds to fp16
  after every step instead; ours is the more accurate one and is what we promise).
- int8 inputs: exact int32 products, int32 sum with two's-complement wrap-around.
- fp64: follows the project's fp64 policy (msl_types: downcast to fp32 with a warning, or
  MSLTRANS_FP64=refuse); the dot then is the fp32 dot.

Paths (ops_dot_simdgroup.py has (b)):
 (a) registers: a #dot_op<#blocked> operand layout gives every thread the whole K extent of
     the rows/columns its outputs need, so the chain runs on the thread's own registers;
 (a') scratch: the same chain reading A and B from threadgroup memory, for operand layouts
     that do not line up with the result's (not produced by Triton's passes today);
 (b) simdgroup_matrix 8x8 tiles for float dots with M, N, K multiples of 8 that fit.
(b) and (a') stage A and B in threadgroup memory anyway, so a ttg.convert_layout feeding
them (into #dot_op) is folded: the dot stages the convert's source (`folds_convert`).
- fp8 operands (f8E4M3FN / f8E5M2, either mix): widened to fp16 where they are read or
  staged (exact: every fp8 value is an fp16 value), then the fp16 dot above: fp32 products
  and fp32 accumulation (NVIDIA without fp8 MMA upcasts the same way).
Refused: tf32 / tf32x3 / bf16x3 input precisions (Apple has no tf32).
"""

from __future__ import annotations

import contextlib
import re
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from msltrans.errors import MetalNonRecoverableError
from msltrans.ir.model import Op, Value
from msltrans.ir.types import ScalarType, TensorType
from msltrans.layout import LinearLayout
from msltrans.lower.emitter import LANE, WARP, Emitter
from msltrans.lower.msl_types import FP8_TYPES
from msltrans.lower.ops_fp8 import FP8_SHORT, need_fp8_support
from msltrans.lower.registry import lowers
from msltrans.lower.templates import environment

METAL_THREADGROUP_BYTES = 32768
_PRECISION_RE = re.compile(r"inputPrecision\s*=\s*(\w+)")
# (input element, accumulator element) pairs Triton's tl.dot produces.
_ALLOWED = {("f32", "f32"), ("f16", "f32"), ("f16", "f16"), ("bf16", "f32"), ("f64", "f64"),
            ("i8", "i32")}
_BYTES = {"float": 4, "half": 2, "bfloat": 2, "char": 1, "int": 4}
PATHS = ("auto", "simdgroup", "registers", "scratch")
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


@dataclass(frozen=True)
class DotInfo:
    """What every path needs to know about one tt.dot."""

    a: Value
    b: Value
    c: Value
    out: Value
    batch: int
    m: int
    n: int
    k: int
    in_t: str  # MSL element type of A and B
    acc_t: str  # MSL type the chain runs in ("float" or "int")
    out_t: str  # MSL element type of C and D
    is_int: bool
    # fp8 operands (bytes) are widened to half, exactly, where they are read or staged:
    # the MSL function applied to each raw element ("" = none).
    a_conv: str = ""
    b_conv: str = ""

    @staticmethod
    def shape(v: Value) -> tuple[int, ...]:
        assert isinstance(v.type, TensorType)
        return v.type.shape


def macros() -> Any:
    """The dot macros (dot.metal.j2) as callables (a Jinja template module)."""
    return environment().get_template("dot.metal.j2").module


def render(em: Emitter, macro: str, **kw: object) -> None:
    em.lines_from(str(getattr(macros(), macro)(**kw)))


def _element(em: Emitter, v: Value) -> str:
    if not isinstance(v.type, TensorType) or not isinstance(v.type.element, ScalarType):
        em.fail(f"tt.dot operand {v.name or v.id} is not a tensor of numbers")
    return v.type.element.name


def _check(em: Emitter, op: Op) -> DotInfo:
    m = _PRECISION_RE.search(op.text)
    precision = m.group(1).lower() if m else "ieee"
    if precision != "ieee":
        em.fail(f"tt.dot with input_precision={precision!r}: Apple has no tf32",
                "pass input_precision='ieee'")
    if len(op.operands) != 3:
        em.fail(f"tt.dot with {len(op.operands)} operands (expected A, B, C)")
    a, b, c = op.operands
    out = op.results[0]
    ea, eb, ec, eo = (_element(em, v) for v in (a, b, c, out))
    convs = ["", ""]
    if ea.startswith("f8") or eb.startswith("f8"):
        if not (ea in FP8_TYPES and eb in FP8_TYPES) or ec != eo or eo not in ("f32", "f16"):
            em.fail(f"tt.dot {ea} x {eb} + {ec} -> {eo} is not a supported fp8 combination",
                    "fp8 x fp8 (float8e4nv / float8e5, mixed allowed) -> fp32 or fp16")
        need_fp8_support(em)
        convs = [f"msl_{FP8_SHORT[e]}_to_half" for e in (ea, eb)]
        ea = eb = "f16"  # every fp8 value is exact in half: the fp16 dot follows
    if ea != eb or ec != eo or (ea, eo) not in _ALLOWED:
        em.fail(f"tt.dot {ea} x {eb} + {ec} -> {eo} is not a supported combination",
                "fp32/fp16/bf16 -> fp32, fp16 -> fp16, int8 -> int32")
    # max_num_imprecise_acc only changes fp8 dots on NVIDIA sm_90 (how often the tensor-core
    # accumulator is promoted); here every fp8 dot accumulates in fp32, so it has no effect.
    sa, sb, so = DotInfo.shape(a), DotInfo.shape(b), DotInfo.shape(out)
    if not (len(sa) == len(sb) == len(so) and len(sa) in (2, 3)):
        em.fail(f"tt.dot of shapes {sa} x {sb} -> {so}")
    if sa[-1] != sb[-2] or so[-2:] != (sa[-2], sb[-1]) or not sa[:-2] == sb[:-2] == so[:-2]:
        em.fail(f"tt.dot shapes {sa} x {sb} -> {so} do not match")
    if c.type != out.type:
        em.fail("tt.dot accumulator and result differ in type or layout",
                "Triton gives C and D the same layout; report the kernel")
    is_int = ea == "i8"
    in_t, out_t = ("half" if convs[0] else em.ctype(a)), em.ctype(out)
    return DotInfo(a, b, c, out, sa[0] if len(sa) == 3 else 1, sa[-2], sb[-1], sa[-1],
                   in_t, "int" if is_int else "float", out_t, is_int, convs[0], convs[1])


# ---- (a) registers -----------------------------------------------------------------------
@dataclass(frozen=True)
class RegisterPlan:
    a_index: list[list[int]]  # [out register][k] -> A register of the same thread
    b_index: list[list[int]]


def _lane_warp_agree(out: LinearLayout, a: LinearLayout, b: LinearLayout) -> bool:
    """Every lane/warp bit moves A's row and B's column exactly as it moves D's element."""
    for kind in ("lane", "warp"):
        bo, ba, bb = (getattr(x, kind) for x in (out, a, b))
        if not len(bo) == len(ba) == len(bb):
            return False
        for vo, va, vb in zip(bo, ba, bb, strict=True):
            if va != vo[:-1] + (0,) or vb != vo[:-2] + (0, vo[-1]):
                return False
    return True


def register_plan(out: LinearLayout, a: LinearLayout, b: LinearLayout,
                  k: int) -> RegisterPlan | None:
    """Where, in its own registers, each thread finds a[i, k] and b[k, j] for its outputs;
    None when some thread does not hold them (then the operands go through scratch)."""
    if not _lane_warp_agree(out, a, b):
        return None
    tables = []
    for ll in (a, b):
        t: dict[tuple[int, ...], int] = {}
        for r in range(ll.num_regs):
            t.setdefault(ll.coord(r, 0, 0), r)
        tables.append(t)
    a_index: list[list[int]] = []
    b_index: list[list[int]] = []
    for r in range(out.num_regs):
        co = out.coord(r, 0, 0)
        try:
            row = [tables[0][co[:-1] + (kk,)] for kk in range(k)]
            col = [tables[1][co[:-2] + (kk, co[-1])] for kk in range(k)]
        except KeyError:  # this thread does not hold some a[i, k] / b[k, j]
            return None
        a_index.append(row)
        b_index.append(col)
    return RegisterPlan(a_index, b_index)


def _index_expr(em: Emitter, table: list[list[int]], what: str) -> str:
    """MSL for table[r][k]: two 1-D tables XORed when the index separates (the usual case:
    register bits for rows and for k are disjoint), else one 2-D table."""
    regs, k = len(table), len(table[0])
    t_ctype = "ushort" if max(max(row) for row in table) < 65536 else "uint"
    if all(table[r][kk] == table[r][0] ^ table[0][kk] ^ table[0][0]
           for r in range(regs) for kk in range(k)):
        rows, ks = [table[r][0] for r in range(regs)], [table[0][kk] ^ table[0][0]
                                                         for kk in range(k)]
        if rows == list(range(0, regs * k, k)) and ks == list(range(k)):
            return f"r * {k}u + k"  # the plain row-major case needs no table
        t_r, t_k = em.fresh(f"dot_{what}_r"), em.fresh(f"dot_{what}_k")
        em.prelude.append(str(macros().const_table(t_ctype, t_r, rows)))
        em.prelude.append(str(macros().const_table(t_ctype, t_k, ks)))
        return f"{t_r}[r] ^ {t_k}[k]"
    flat = [v for row in table for v in row]
    name = em.fresh(f"dot_{what}_rk")
    em.prelude.append(str(macros().const_table(t_ctype, name, flat)))
    return f"{name}[r * {k}u + k]"


def step_expr(info: DotInfo, a: str, b: str) -> str:
    """One link of the chain, in the accumulator's type."""
    if info.is_int:
        # int8 x int8 fits int16; the sum wraps like two's complement (uint add is defined).
        return f"acc = as_type<int>(as_type<uint>(acc) + as_type<uint>(int({a}) * int({b})));"
    return f"acc = fma(float({a}), float({b}), acc);"


def _emit_registers(em: Emitter, info: DotInfo, plan: RegisterPlan) -> None:
    a_idx = _index_expr(em, plan.a_index, "a")
    b_idx = _index_expr(em, plan.b_index, "b")
    c, a, b = em.name(info.c), em.name(info.a), em.name(info.b)
    regs = em.regs(info.out)
    d = em.declare(info.out)
    render(em, "stats", items=[("path", "registers"), ("k", info.k), ("regs_out", regs),
                               ("regs_a", em.regs(info.a)), ("regs_b", em.regs(info.b)),
                               ("scratch_bytes", 0), ("barriers", 0), ("mma", 0)])
    render(em, "fma_registers", d=d, c=c, regs=regs, k=info.k, acc_t=info.acc_t,
           out_t=info.out_t, init=f"{info.acc_t}({c}[r])",
           step=step_expr(info, f"{info.a_conv}({a}[{a_idx}])", f"{info.b_conv}({b}[{b_idx}])"))


# ---- (a') scratch --------------------------------------------------------------------------
def _align16(n: int) -> int:
    return (n + 15) // 16 * 16


def scratch_bytes_ab(info: DotInfo) -> tuple[int, int]:
    """(byte offset of B, total bytes) for A and B staged row-major in their own type."""
    size = _BYTES[info.in_t]
    off_b = _align16(info.batch * info.m * info.k * size)
    return off_b, off_b + _align16(info.batch * info.k * info.n * size)


def _emit_scratch(em: Emitter, info: DotInfo) -> None:
    off_b, total = scratch_bytes_ab(info)
    if total > METAL_THREADGROUP_BYTES:
        em.fail(f"tt.dot operands need {total} bytes of threadgroup memory (Metal has 32 KB)",
                "use smaller BLOCK sizes")
    scratch = em.need_scratch(total)
    src_a, src_b = staging_source(em, info.a), staging_source(em, info.b)
    L_a, L_b, L_o = em.layout(src_a), em.layout(src_b), em.layout(info.out)
    c, a, b = em.name(info.c), em.name(src_a), em.name(src_b)
    d = em.declare(info.out)
    render(em, "stats", items=[("path", "scratch"), ("k", info.k), ("regs_out", L_o.regs),
                               ("regs_a", L_a.regs), ("regs_b", L_b.regs),
                               ("scratch_bytes", total), ("barriers", 2), ("mma", 0)])
    em.line("{")
    em.indent(1)
    render(em, "scratch_region", ctype=info.in_t, name="sa", scratch=scratch, byte_offset=0)
    render(em, "scratch_region", ctype=info.in_t, name="sb", scratch=scratch,
           byte_offset=off_b)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // earlier scratch readers done")
    for src, L, dst, conv in ((a, L_a, "sa", info.a_conv), (b, L_b, "sb", info.b_conv)):
        render(em, "stage", dst=dst, src=src, layout=L.name, regs=L.regs, lane=LANE,
               warp=WARP, conv=conv)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);")
    rank = len(DotInfo.shape(info.out))
    coords = [f"uint i = {L_o.coord_fn(rank - 2)}(r, {LANE}, {WARP});",
              f"uint j = {L_o.coord_fn(rank - 1)}(r, {LANE}, {WARP});"]
    row_base, col_base = f"i * {info.k}u", "j"
    if rank == 3:
        coords.append(f"uint bt = {L_o.coord_fn(0)}(r, {LANE}, {WARP});")
        row_base = f"(bt * {info.m}u + i) * {info.k}u"
        col_base = f"bt * {info.k * info.n}u + j"
    render(em, "fma_scratch", d=d, c=c, regs=L_o.regs, k=info.k, acc_t=info.acc_t,
           out_t=info.out_t, init=f"{info.acc_t}({c}[r])", row_base=row_base,
           col_base=col_base, coords=coords,
           step=step_expr(info, "sa[a_base + k]", f"sb[b_base + k * {info.n}u]"))
    em.indent(-1)
    em.line("}")


# ---- path choice and operand folding ---------------------------------------------------------
def choose(em: Emitter, info: DotInfo) -> tuple[str, object]:
    """(path, its plan): simdgroup when shapes/types/size allow, else registers when the
    operand layouts line up, else scratch. A deterministic function of the op, so the
    convert_layout feeding an operand can ask it before the dot is emitted."""
    from msltrans.lower import ops_dot_simdgroup as sg

    forced = _forced[-1]
    if forced in ("auto", "simdgroup"):
        plan = sg.plan(em, info)
        if plan is not None:
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


_folded: weakref.WeakKeyDictionary[Emitter, set[int]] = weakref.WeakKeyDictionary()


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
    paths). That dot then stages the convert's source, in the source's own layout (owners
    write row-major by flat index, whatever the layout), saving one round trip through
    scratch, two barriers and the #dot_op registers (the whole K extent per thread)."""
    out = op.results[0]
    user = _dot_user(em, out)
    if user is None or not em.is_tensor(op.operands[0]):
        return False
    outer = em.op
    try:
        em.op = user[0]
        path, _ = choose(em, _check(em, user[0]))
    except MetalNonRecoverableError:
        return False  # the dot itself will refuse, at its own location
    finally:
        em.op = outer
    if path == "registers":
        return False
    _folded.setdefault(em, set()).add(out.id)
    em.line("// folded into the tt.dot that uses it: the dot stages the source directly")
    return True


def staging_source(em: Emitter, v: Value) -> Value:
    """The value whose registers the dot stages for operand `v` (the folded convert's
    source, or `v` itself)."""
    if v.id in _folded.get(em, set()):
        producer = em.producers[v.id]
        return producer.operands[0]
    return v


# ---- the op --------------------------------------------------------------------------------
@lowers("tt.dot")
def dot(em: Emitter, op: Op) -> None:
    from msltrans.lower import ops_dot_simdgroup as sg

    info = _check(em, op)
    path, plan = choose(em, info)
    if path == "simdgroup":
        from msltrans.lower import ops_dot_resident as resident

        step = resident.resident_step(em, op)  # its K loop keeps the accumulator resident
        if step is not None:
            resident.emit_step(em, info, *step)
        else:
            sg.emit(em, info, plan)  # type: ignore[arg-type]
    elif path == "registers":
        if {info.a.id, info.b.id} & _folded.get(em, set()):
            em.fail("internal: an operand was folded but the dot takes the register path")
        _emit_registers(em, info, plan)  # type: ignore[arg-type]
    else:
        _emit_scratch(em, info)
