"""tt.map_elementwise (tl.map_elementwise): a user scalar function applied per element.

The region (one or several blocks: an `if`/`return` in the scalar function becomes
cf.cond_br) is emitted once inside a loop over this thread's register groups, through the
normal registry and the CFG re-nesting of `cfg.emit_region`; `tt.map_elementwise.return`
writes the group's results. With `pack = P` one call takes P consecutive registers of each
operand (arguments ordered operand-major: a0..aP-1, b0..bP-1) and returns P values per
result (result-major), as in Triton's own lowering. Only ops that act on this thread's
scalars may appear in the region: anything with threadgroup-wide behaviour (memory, atomics,
barriers, prints) would run per element under divergent control flow, and is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from msltrans.ir.model import Op, Region
from msltrans.lower.control.cfg import emit_region
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowers

_RETURN = "tt.map_elementwise.return"
_SCALAR_OPS = {_RETURN, "tt.extern_elementwise", "tt.precise_sqrt", "tt.precise_divf",
               "tt.fp_to_fp", "tt.bitcast", "tt.mulhiui", "tt.clampf", "scf.if", "scf.for",
               "scf.while", "scf.yield", "scf.condition", "ub.poison", "llvm.intr.assume"}
_GROUP = "msl_g"


def _check_region(em: Emitter, region: Region) -> None:
    for block in region.blocks:
        for op in block.ops:
            if not (op.name.startswith(("arith.", "math.", "cf.")) or op.name in _SCALAR_OPS):
                em.fail(f"{op.name} inside a tl.map_elementwise function",
                        "only scalar arithmetic, math and control flow are supported there")
            for inner in op.regions:
                _check_region(em, inner)


@dataclass
class _Returns:
    """Per function: for each tt.map_elementwise being emitted (innermost last), the MSL
    slots its scalar function's returns assign."""

    stack: list[list[str]] = field(default_factory=list)


def _stack(em: Emitter) -> list[list[str]]:
    return em.family(_Returns).stack


@lowers("tt.map_elementwise")
def map_elementwise(em: Emitter, op: Op) -> None:
    pack = int(op.attrs.get("pack", 1))
    srcs, outs = list(op.operands), list(op.results)
    if len(op.regions) != 1 or not op.regions[0].blocks:
        em.fail("tt.map_elementwise without its scalar function region")
    region = op.regions[0]
    entry = region.blocks[0]
    if len(entry.args) != len(srcs) * pack:
        em.fail(f"map_elementwise region with {len(entry.args)} arguments for "
                f"{len(srcs)} operands x pack {pack}")
    _check_region(em, region)
    if not all(em.is_tensor(v) for v in srcs + outs):
        em.fail("tt.map_elementwise on scalars")
    ll = em.layout(outs[0]).ll
    if any(em.layout(v).ll != ll for v in srcs + outs):
        em.fail("tt.map_elementwise operands/results in different layouts")
    regs = ll.num_regs
    if regs % pack:
        em.fail(f"pack = {pack} does not divide the {regs} registers per thread",
                "use a BLOCK with at least `pack` elements per thread")
    names = [em.declare(v) for v in outs]
    em.line(f"msl_unroll for (uint {_GROUP} = 0u; {_GROUP} < {regs // pack}u; ++{_GROUP}) {{")
    em.indent(1)
    for i, src in enumerate(srcs):
        for j in range(pack):
            arg = entry.args[i * pack + j]
            local = em.fresh(arg.name or "elt")
            em.line(f"{em.ctype(arg)} {local} = {em.name(src)}[{_slot(pack, j)}];")
            em.bind(arg, local)
    _stack(em).append([f"{names[k]}[{_slot(pack, j)}]" for k in range(len(outs))
                       for j in range(pack)])
    outer = em.op
    try:
        emit_region(em, region)
    finally:
        em.op = outer
        _stack(em).pop()
    em.indent(-1)
    em.line("}")


def _slot(pack: int, j: int) -> str:
    return _GROUP if pack == 1 else f"{_GROUP} * {pack}u + {j}u"


@lowers(_RETURN)
def map_return(em: Emitter, op: Op) -> None:
    stack = _stack(em)
    if not stack:
        em.fail(f"{_RETURN} outside a tt.map_elementwise region")
    dsts = stack[-1]
    if len(op.operands) != len(dsts):
        em.fail(f"{_RETURN} with {len(op.operands)} values for {len(dsts)} result slots")
    for dst, v in zip(dsts, op.operands, strict=True):
        em.line(f"{dst} = {em.name(v)};")
