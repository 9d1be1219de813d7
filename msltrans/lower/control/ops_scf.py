"""Control flow: scf.for, scf.while, scf.if, their terminators; cf.br/cond_br (see cfg.py).

Loop-carried values and region results live in variables declared *outside* the MSL loop or
`if` (register arrays for tensors); block arguments are bound to them with `em.bind`, and a
terminator copies its operands into them. Terminators are handled by the op owning the region
(they need to know where their values go), so a stray scf.yield/scf.condition refuses.

Uniformity: every condition and bound here is an MLIR scalar (scf.if/scf.while take `i1`, not
`tensor<i1>`), and Triton scalars are uniform across the program (one threadgroup), so every
thread takes the same path and meets the same barriers. Per-thread predicates only ever appear
as tensor masks, which lower to selects, never to branches around barriers.
"""

from __future__ import annotations

from collections.abc import Sequence

from msltrans.ir.model import Block, Op, Region, Value
from msltrans.ir.types import ScalarType
from msltrans.lower.dot import fragment_loop
from msltrans.lower.dot.resident import enter_loop
from msltrans.lower.emitter import REG, Emitter
from msltrans.lower.registry import lowers

_TERMINATORS = ("scf.yield", "scf.condition")


def declare_var(em: Emitter, v: Value, hint: str) -> str:
    """A fresh variable able to hold `v` (an array for tensors); nothing is bound."""
    name = em.fresh(hint)
    if em.is_tensor(v):
        em.line(f"{em.ctype(v)} {name}[{em.regs(v)}];")
    else:
        em.line(f"{em.ctype(v)} {name};")
    return name


def assign(em: Emitter, dst: str, src: Value) -> None:
    """dst = src, register by register for tensors (same type → same layout)."""
    if em.name(src) == dst:
        return
    if em.is_tensor(src):
        em.render("element_loop", reg=REG, regs=em.regs(src),
                  body=f"{dst}[{REG}] = {em.at(src)};")
    else:
        em.line(f"{dst} = {em.name(src)};")


def assign_all(em: Emitter, dsts: Sequence[str], srcs: Sequence[Value]) -> None:
    """Parallel assignment: a source may be one of the destinations (`yield %b, %a` of
    carried %a, %b), so then every source is first copied to a temporary."""
    if len(dsts) != len(srcs):
        em.fail(f"terminator carries {len(srcs)} values into {len(dsts)} slots")
    pending = [(d, s) for d, s in zip(dsts, srcs, strict=True) if em.name(s) != d]
    if any(em.name(s) in dsts for _, s in pending):
        temps = []
        for _, s in pending:
            t = declare_var(em, s, "msl_tmp")
            assign(em, t, s)
            temps.append(t)
        for (d, s), t in zip(pending, temps, strict=True):
            if em.is_tensor(s):
                em.render("element_loop", reg=REG, regs=em.regs(s),
                          body=f"{d}[{REG}] = {t}[{REG}];")
            else:
                em.line(f"{d} = {t};")
        return
    for d, s in pending:
        assign(em, d, s)


def single_block(em: Emitter, region: Region, what: str) -> Block:
    if len(region.blocks) != 1:
        em.fail(f"{what} region with {len(region.blocks)} blocks (unstructured control flow)",
                "only single-block scf regions are supported")
    return region.blocks[0]


def emit_body(em: Emitter, block: Block, expect: str,
              order: Sequence[Op] | None = None) -> Op | None:
    """Emit every op but the terminator (in `order` when given: the block's ops rearranged);
    return the terminator (None for an elided one)."""
    ops = list(block.ops if order is None else order)
    term = ops.pop() if ops and ops[-1].name in _TERMINATORS else None
    for op in ops:
        em.emit_op(op)
    if term is not None and term.name != expect:
        em.fail(f"region ends in {term.name}, expected {expect}")
    return term


def _results(em: Emitter, op: Op, hint: str) -> list[str]:
    names = [declare_var(em, r, r.name or hint) for r in op.results]
    return names


def _bind_results(em: Emitter, op: Op, names: list[str]) -> None:
    for r, n in zip(op.results, names, strict=True):
        em.bind(r, n)


@lowers("scf.yield", "scf.condition")
def stray_terminator(em: Emitter, op: Op) -> None:
    em.fail("terminator outside a region its parent op lowers",
            "report the kernel: an enclosing op's lowering should have consumed it")


@lowers("cf.br", "cf.cond_br")
def stray_branch(em: Emitter, op: Op) -> None:
    # Function bodies are emitted by msltrans.lower.control.cfg, which consumes their branches.
    em.fail("branch inside a structured region (unstructured control flow in a loop or if)",
            "only function bodies may branch between blocks")


@lowers("scf.for")
def scf_for(em: Emitter, op: Op) -> None:
    lb, ub, step, *inits = op.operands
    block = single_block(em, op.regions[0], "scf.for")
    iv, *args = block.args
    if not isinstance(iv.type, ScalarType) or iv.type.name not in ("i32", "i64", "index"):
        em.fail(f"scf.for induction variable of type {iv.type}", "use i32 or i64 bounds")
    if len(args) != len(inits) or len(op.results) != len(inits):
        em.fail("scf.for with mismatched iter_args / results")
    carried = _results(em, op, "carried")
    resident = enter_loop(em, op, carried)  # dot accumulators kept in simdgroup matrices
    fragment_tiles = fragment_loop.enter_loop(em, op)  # its fragment dots' pinned tiles
    for i, (name, init) in enumerate(zip(carried, inits, strict=True)):
        if i not in resident.indices:
            assign(em, name, init)
    it = em.ctype(iv)
    # MLIR scf.for compares signed unless printed `unsigned`; the increment wraps like the
    # LLVM lowering (no nsw), done in unsigned arithmetic because signed overflow is UB in MSL.
    ut = {"int": "uint", "long": "ulong"}[it]
    cmp_t = ut if " unsigned " in f" {op.text} " else it
    var = em.fresh(iv.name or "iv")
    em.line(f"for ({it} {var} = {em.name(lb)}; {cmp_t}({var}) < {cmp_t}({em.name(ub)}); "
            f"{var} = {it}({ut}({var}) + {ut}({em.name(step)}))) {{")
    em.indent(1)
    em.bind(iv, var)
    for a, name in zip(args, carried, strict=True):
        em.bind(a, name)
    if fragment_tiles.order is not None:
        em.line("// global loads issued before the first dot (lower/dot/loop_schedule.py)")
    term = emit_body(em, block, "scf.yield", fragment_tiles.order)
    assign_all(em, carried, list(term.operands) if term else [])
    em.indent(-1)
    em.line("}")
    resident.leave(em)
    fragment_tiles.leave(em)
    _bind_results(em, op, carried)


@lowers("scf.if")
def scf_if(em: Emitter, op: Op) -> None:
    cond = op.operands[0]
    if em.is_tensor(cond):
        em.fail("scf.if on a tensor condition (per-thread branch)",
                "branch on a scalar; use tl.where for per-element choices")
    outs = _results(em, op, "if_result")
    em.line(f"if ({em.name(cond)}) {{")
    for k, region in enumerate(op.regions):
        if not region.blocks:
            continue  # an absent else
        if k == 1:
            em.line("} else {")
        em.indent(1)
        term = emit_body(em, single_block(em, region, "scf.if"), "scf.yield")
        assign_all(em, outs, list(term.operands) if term else [])
        em.indent(-1)
    em.line("}")
    _bind_results(em, op, outs)


@lowers("scf.while")
def scf_while(em: Emitter, op: Op) -> None:
    before = single_block(em, op.regions[0], "scf.while before")
    after = single_block(em, op.regions[1], "scf.while after")
    carried = [declare_var(em, a, a.name or "w_carried") for a in before.args]
    for name, init in zip(carried, op.operands, strict=True):
        assign(em, name, init)
    outs = _results(em, op, "w_result")
    em.line("while (true) {")
    em.indent(1)
    for a, name in zip(before.args, carried, strict=True):
        em.bind(a, name)
    term = emit_body(em, before, "scf.condition")
    if term is None:
        em.fail("scf.while before-region without scf.condition")
    cond, *fwd = term.operands
    assign_all(em, outs, fwd)
    em.line(f"if (!{em.name(cond)}) break;")
    for a, name in zip(after.args, outs, strict=True):
        em.bind(a, name)
    yterm = emit_body(em, after, "scf.yield")
    assign_all(em, carried, list(yterm.operands) if yterm else [])
    em.indent(-1)
    em.line("}")
    _bind_results(em, op, outs)
