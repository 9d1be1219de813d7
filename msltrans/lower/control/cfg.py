"""Function bodies with several blocks (`cf.br` / `cf.cond_br`), without `goto`.

Triton turns an early `return` into unstructured control flow: `cf.cond_br %c, ^bb1, ^bb2`
with `tt.return` in one successor. MSL has no `goto`, so the blocks are re-nested along the
dominator tree: a block is emitted inside the scope of its immediate dominator (the values it
may use are then in scope), guarded by a `reached` flag that its predecessors set. This is
exact for any acyclic CFG (what Triton emits — its loops are scf.for/scf.while); a cycle
refuses. Branch conditions are scalars, hence
uniform across the threadgroup, so an early `return` never strands a barrier.
"""

from __future__ import annotations

import re

from msltrans.ir.model import Op, Region
from msltrans.lower.control.ops_scf import assign, declare_var
from msltrans.lower.emitter import Emitter

_TARGET = re.compile(r"\^bb(\d+)(\(([^)]*)\))?")


def _successors(em: Emitter, op: Op) -> list[tuple[int, list]]:
    """(block index, operand values) per successor, in the printed order."""
    first = 1 if op.name == "cf.cond_br" else 0
    operands = list(op.operands[first:])
    out = []
    for m in _TARGET.finditer(op.text):
        inner = (m.group(3) or "").split(":", 1)[0]
        count = inner.count("%")
        out.append((int(m.group(1)), operands[:count]))
        operands = operands[count:]
    want = 2 if op.name == "cf.cond_br" else 1
    if len(out) != want or operands:
        em.fail(f"could not read the successors of {op.name} from `{op.text}`",
                "report the kernel")
    return out


def _topo_order(em: Emitter, preds: list[list[int]], succ: list[list[int]]) -> list[int]:
    """Blocks in a topological order starting at the entry (Kahn); a cycle refuses."""
    indeg = [len(set(p)) for p in preds]
    if any(indeg[b] == 0 for b in range(1, len(preds))):
        em.fail("a block without predecessors (unreachable code)", "report the kernel")
    order, ready = [], [0]
    while ready:
        b = ready.pop(0)
        order.append(b)
        for t in sorted(set(succ[b])):
            indeg[t] -= 1
            if indeg[t] == 0:
                ready.append(t)
    if len(order) != len(preds):
        em.fail("a backward branch (a loop in unstructured control flow)",
                "write loops with for/while so Triton emits scf.for/scf.while")
    return order


def _idoms(preds: list[list[int]], order: list[int]) -> list[int]:
    """Immediate dominators of a DAG, visiting blocks in topological `order`."""
    idom = [0] * len(preds)
    depth = [0] * len(preds)
    for b in order[1:]:
        cur = preds[b][0]
        for p in preds[b][1:]:
            a = p
            while a != cur:
                if depth[a] >= depth[cur]:
                    a = idom[a]
                else:
                    cur = idom[cur]
        idom[b] = cur
        depth[b] = depth[cur] + 1
    return idom


def emit_region(em: Emitter, region: Region) -> None:
    """Emit a function body: one block directly, several along the dominator tree."""
    blocks = region.blocks
    if len(blocks) == 1:
        em.emit_block(blocks[0])
        return
    em.op = None
    preds: list[list[int]] = [[] for _ in blocks]
    succ: list[list[tuple[int, list]]] = []
    for b, block in enumerate(blocks):
        term = block.ops[-1] if block.ops else None
        if term is not None and term.name in ("cf.br", "cf.cond_br"):
            em.op = term
            targets = _successors(em, term)
        else:
            targets = []
        for t, _ in targets:
            if t >= len(blocks):
                em.fail(f"branch to missing block ^bb{t}", "report the kernel")
            preds[t].append(b)
        succ.append(targets)
    order = _topo_order(em, preds, [[t for t, _ in s] for s in succ])
    pos = {b: i for i, b in enumerate(order)}
    idom = _idoms(preds, order)
    flags = {b: em.fresh(f"msl_bb{b}") for b in range(1, len(blocks))}
    for b in range(1, len(blocks)):
        em.line(f"bool {flags[b]} = false;")
    slots: dict[int, list[str]] = {0: []}  # the entry's arguments are the function's
    for b, block in enumerate(blocks[1:], start=1):
        slots[b] = [declare_var(em, a, a.name or f"bb{b}_arg") for a in block.args]
        for a, name in zip(block.args, slots[b], strict=True):
            em.bind(a, name)
    # Children in topological order: every predecessor of a block is emitted before it.
    children = {b: sorted((c for c in order[1:] if idom[c] == b), key=pos.__getitem__)
                for b in range(len(blocks))}

    def emit(b: int) -> None:
        block = blocks[b]
        ops = list(block.ops)
        term = ops.pop() if succ[b] else None
        for op in ops:
            em.emit_op(op)
        if term is not None:
            em.op = term
            em.line(f"// {term.name}  {term.loc.short()}")
            _branch(em, term, succ[b], flags, slots)
        for c in children[b]:
            em.line(f"if ({flags[c]}) {{")
            em.indent(1)
            emit(c)
            em.indent(-1)
            em.line("}")

    emit(0)


def _branch(em: Emitter, term: Op, targets: list[tuple[int, list]], flags: dict[int, str],
            slots: dict[int, list[str]]) -> None:
    def go(t: int, values: list) -> None:
        for name, v in zip(slots[t], values, strict=True):
            assign(em, name, v)
        em.line(f"{flags[t]} = true;")

    if term.name == "cf.br":
        go(*targets[0])
        return
    cond = term.operands[0]
    if em.is_tensor(cond):
        em.fail("branch on a tensor condition")
    em.line(f"if ({em.name(cond)}) {{")
    em.indent(1)
    go(*targets[0])
    em.indent(-1)
    em.line("} else {")
    em.indent(1)
    go(*targets[1])
    em.indent(-1)
    em.line("}")

