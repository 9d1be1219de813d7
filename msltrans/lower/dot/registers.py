"""tt.dot path (a), registers: a #dot_op<#blocked> operand layout gives every thread the whole K
extent of the rows/columns its outputs need, so the chain runs on the thread's own registers
(`register_plan` proves it from the linear layouts; index tables go to `constant` arrays)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import lru_cache

from msltrans.abi.limits import THREADGROUP_MEMORY_BYTES
from msltrans.errors import MetalPerformanceWarning
from msltrans.layout import LinearLayout
from msltrans.lower.dot.fragments import MAX_FRAGMENT_TILES
from msltrans.lower.dot.info import BYTES, DotInfo, render
from msltrans.lower.emitter import Emitter
from msltrans.lower.unroll import MAX_UNROLLED_NEST


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


# choose.choose asks for a dot's plan up to four times (each operand's convert, the loop's
# tile pinning, the dot): the tables are built once (layouts are frozen, so hashable).
@lru_cache(maxsize=8)
def register_plan(out: LinearLayout, a: LinearLayout, b: LinearLayout,
                  k: int) -> RegisterPlan | None:
    """Where, in its own registers, each thread finds a[i, k] and b[k, j] for its outputs;
    None when some thread does not hold them (then the operands go through scratch). The
    plan is shared between callers: read it, do not change it."""
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
        em.render("dot.const_table", prelude=True, ctype=t_ctype, name=t_r, values=rows)
        em.render("dot.const_table", prelude=True, ctype=t_ctype, name=t_k, values=ks)
        return f"{t_r}[r] ^ {t_k}[k]"
    flat = [v for row in table for v in row]
    name = em.fresh(f"dot_{what}_rk")
    em.render("dot.const_table", prelude=True, ctype=t_ctype, name=name, values=flat)
    return f"{name}[r * {k}u + k]"


def step_expr(info: DotInfo, a: str, b: str) -> str:
    """One link of the chain, in the accumulator's type."""
    if info.is_int:
        # int8 x int8 fits int16; the sum wraps like two's complement (uint add is defined).
        return f"acc = as_type<int>(as_type<uint>(acc) + as_type<uint>(int({a}) * int({b})));"
    return f"acc = fma(float({a}), float({b}), acc);"


# Operand bytes a thread may hold on this path before msltrans says it is slow: 1 KB is what
# 255 32-bit registers (the most a CUDA thread has) could hold; past 4 KB the arrays live in
# the thread's memory on any GPU.
SLOW_OPERAND_BYTES = 4096


def operand_bytes(em: Emitter, info: DotInfo) -> int:
    """Bytes of A and B elements one thread keeps for the chain (its #dot_op arrays)."""
    width = BYTES.get(info.in_t, 4)
    return (em.regs(info.a) + em.regs(info.b)) * width


def warn_if_slow(em: Emitter, info: DotInfo) -> None:
    """A register-path dot with more operand bytes a thread than registers can hold is
    correct but slow (its arrays spill to memory): say so, with what to change."""
    held = operand_bytes(em, info)
    if held <= SLOW_OPERAND_BYTES:
        return
    if info.is_int:
        why = "Apple's simdgroup matrices have no integer type"
        change = "Smaller blocks keep the arrays small"
    else:
        why = (f"no simdgroup-matrix path takes these tiles: over the fragment path's "
               f"{MAX_FRAGMENT_TILES} 8x8 accumulator tiles a simdgroup, or operand tiles over "
               f"{THREADGROUP_MEMORY_BYTES // 1024} KB of threadgroup memory, or a shape "
               "not a multiple of 8")
        change = "More warps or a smaller block lets it run on simdgroup matrices"
    warnings.warn(MetalPerformanceWarning(
        f"msltrans: tt.dot {info.m}x{info.n}x{info.k} at {em.where() or 'kernel'} runs on the "
        f"register path with {held} bytes of operands a thread (arrays that live in memory, "
        f"not registers; {why}). {change}."), stacklevel=2)


def emit(em: Emitter, info: DotInfo, plan: RegisterPlan) -> None:
    warn_if_slow(em, info)
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
           unroll_rows=regs * info.k <= MAX_UNROLLED_NEST,
           step=step_expr(info, f"{info.a_conv}({a}[{a_idx}])", f"{info.b_conv}({b}[{b_idx}])"))


