"""Global loads of a fragment-dot loop issued before its first dot.

Attention's KV step, as written (tutorial 06, msltrans/workloads), loads V after QKᵀ and the
softmax. In the emitted MSL that load then follows the barrier after the K copies, which no
compiler moves a load across: the step waits for V's global latency right before staging it.
Issuing the load (and the address arithmetic it needs) before the first dot lets the QKᵀ
multiply and the softmax run while V is in flight, which is what MLX's attention and
Triton's own software pipeliner do.

Applied where the loop's per-step tiles share one region (fragment_loop.py: head dim 128 at
64 x 32 blocks, 4 barriers per step). GPU proxy, H100, two rounds of one lease
(benchmarks/README.md): there the attention forward gains 0-18 % (d128 0.56 -> 0.65 of the
same-run GEMM, tutorial 06's d128 0.55 -> 0.64); with regions of their own (d64) it gains
0-5 % except tutorial 06's causal d64, which falls 10 % (nvcc gives it 168 registers instead
of 128: fewer programs per SM), so those loops keep their order.

Only where it cannot change a value: the loop body writes no memory and synchronises
nothing (no store, atomic, call, print, assert or barrier anywhere in it), so every load
reads the same bytes wherever it sits in the step; a moved op is a load or a pure op
(arith, math, the tensor-shape ops) with no region, and nothing moved uses the first dot's
results or anything computed from them. The ops keep their relative order.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from msltrans.ir.model import Block, Op, Region
from msltrans.lower.dot.switch import Switch

_LOADS = ("tt.load", "tt.descriptor_load")
_SHAPE = ("tt.splat", "tt.broadcast", "tt.expand_dims", "tt.addptr", "tt.make_range",
          "tt.advance", "ttg.convert_layout", "tt.reshape", "tt.trans")
_WRITES = ("store", "atomic", "call", "print", "assert", "barrier", "inline_asm",
           "extern_elementwise", "gather", "scatter")


_enabled = Switch(True)


def kept_in_order() -> AbstractContextManager[None]:
    """Lower with every loop body in its IR order (tests compare the two schedules' bits)."""
    return _enabled.set(False)


def _side_effects(region: Region) -> bool:
    return any(any(w in op.name for w in _WRITES) or any(_side_effects(r) for r in op.regions)
               for block in region.blocks for op in block.ops)


def _movable(op: Op) -> bool:
    if op.regions:
        return False
    return (op.name in _LOADS or op.name in _SHAPE or op.name.startswith("arith.")
            or op.name.startswith("math."))


def loads_first(loop: Op, block: Block, first_dot: Op) -> tuple[Op, ...] | None:
    """The body's ops with every movable global load after `first_dot` (and its operands'
    producers after it) moved just before it, or None when nothing moves."""
    if not _enabled or _side_effects(loop.regions[0]):
        return None
    ops = list(block.ops)
    first = ops.index(first_dot)
    producer = {r.id: i for i, op in enumerate(ops) for r in op.results}
    take: set[int] = set()
    for i in range(first + 1, len(ops)):
        if ops[i].name not in _LOADS:
            continue
        slice_: set[int] = set()
        work = [i]
        ok = True
        while work and ok:
            k = work.pop()
            if k in slice_ or k in take:
                continue
            if k == first or not _movable(ops[k]):
                ok = False
                break
            slice_.add(k)
            work.extend(producer[v.id] for v in ops[k].operands if v.id in producer
                        and producer[v.id] >= first)
        if ok:
            take |= slice_
    if not take:
        return None
    moved = [ops[k] for k in sorted(take)]
    rest = [op for k, op in enumerate(ops) if k >= first and k not in take]
    return tuple(ops[:first] + moved + rest)
