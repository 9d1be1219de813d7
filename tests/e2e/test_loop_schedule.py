"""Global loads of a fragment-dot loop issued before its first dot (lower/dot/loop_schedule.py):
where K and V share one tile region, attention's V load leaves the barrier-separated middle
of the KV step, with the same bits; tiles with regions of their own, loops that write
memory, and loads whose address needs the dot keep their order."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.codegen_stats import k_step_text
from msltrans.ir.model import Block, Location, Op, Region, Value
from msltrans.ir.types import ScalarType
from msltrans.lower.dot import loop_schedule
from tests.e2e.dot_support import dot_stats, same_bits
from tests.e2e.fragment_kernels import attention_kernel
from tests.e2e.test_dot_fragments import _attention_inputs, _attention_ref, _compile
from tests.support.run_kernel import dispatch

LOG2E = 1.4426950408889634
MOVED = "global loads issued before the first dot"


def _run_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, bm: int, bn: int,
                   warps: int, causal: bool, run: bool = True):  # noqa: ANN202
    heads, n, head = q.shape
    o = np.full_like(q, np.nan)
    args = (q, k, v, o, n, LOG2E / math.sqrt(head))
    program = _compile(attention_kernel, args, warps, True, HEAD=head, BM=bm, BN=bn,
                       CAUSAL=causal)
    if run:
        dispatch(program, (-(-n // bm), heads), args)
    return program, o


@pytest.mark.parametrize("causal", [False, True])
def test_attention_v_load_precedes_the_first_dot(causal: bool) -> None:
    """Head dim 128 at 64 x 32 blocks: K and V share one tile region (4 barriers a step)."""
    q, k, v = _attention_inputs(64, 128, 1, np.float16, 0)
    program, _ = _run_attention(q, k, v, 64, 32, 4, causal, run=False)
    step = k_step_text(program.source)
    assert MOVED in step
    # K's and V's loads both come before the first barrier (K's copies) and multiply
    head = step[:step.index("threadgroup_barrier(")]
    assert head.count("// tt.load ") == 2 and "simdgroup_multiply_accumulate" not in head
    assert step.count("threadgroup_barrier(") == 4  # the step's barriers are unchanged
    with loop_schedule.kept_in_order():
        kept, _ = _run_attention(q, k, v, 64, 32, 4, causal, run=False)
    step = k_step_text(kept.source)
    assert MOVED not in step
    assert step[:step.index("threadgroup_barrier(")].count("// tt.load ") == 1


def test_tiles_of_their_own_keep_the_order() -> None:
    """Head dim 64: K and V have regions of their own; the loop keeps its IR order (the
    proxy's tutorial-06 causal d64 lost 10 % with V loaded first)."""
    q, k, v = _attention_inputs(64, 64, 1, np.float16, 0)
    program, _ = _run_attention(q, k, v, 64, 32, 4, True, run=False)
    step = k_step_text(program.source)
    assert MOVED not in step and step.count("threadgroup_barrier(") == 2


@pytest.mark.parametrize(("n", "head", "causal"), [(70, 128, True), (64, 128, False)])
def test_attention_bits_do_not_depend_on_the_schedule(n: int, head: int, causal: bool) -> None:
    """The same ops on the same bytes: the output is bit-identical to the IR-order build's
    (and within the fp16 bound of float64, as test_dot_fragments checks)."""
    q, k, v = _attention_inputs(n, head, 2, np.float16, 3)
    program, o = _run_attention(q, k, v, 64, 32, 4, causal)
    assert MOVED in program.source
    assert [s["path"] for s in dot_stats(program)] == ["fragment", "fragment"]
    with loop_schedule.kept_in_order():
        kept, o_kept = _run_attention(q, k, v, 64, 32, 4, causal)
    assert MOVED not in kept.source
    assert same_bits(o, o_kept)
    ref = _attention_ref(q, k, v, causal)
    bound = 2.0 ** -11 * (np.abs(v).max() + np.abs(ref).max()) + 2e-6
    assert np.abs(o.astype(np.float64) - ref).max() <= bound
    assert math.isfinite(float(np.abs(o).max()))


def test_the_proxys_text_edit_is_the_lowerings_schedule() -> None:
    """benchmarks/proxy/diagnostics.py's `loads first` (timed on the GPU proxy before the
    lowering did it) edits the IR-order MSL into exactly what the lowering emits."""
    from benchmarks.proxy.diagnostics import loads_first

    q, k, v = _attention_inputs(64, 128, 1, np.float16, 0)
    program, _ = _run_attention(q, k, v, 64, 32, 4, True, run=False)
    with loop_schedule.kept_in_order():
        kept, _ = _run_attention(q, k, v, 64, 32, 4, True, run=False)
    edited = loads_first(kept.source)
    assert edited is not None
    emitted = [ln for ln in program.source.split("\n") if MOVED not in ln]
    assert edited.split("\n") == emitted


# ---- the rule on hand-made bodies ---------------------------------------------------------
_T = ScalarType("i32")
_ids = iter(range(10_000))


def _op(name: str, *operands: Value, regions: tuple[Region, ...] = ()) -> Op:
    return Op(name, tuple(operands), (Value(next(_ids), _T),), {}, regions,
              Location(None, None, None))


def _loop(ops: list[Op]) -> tuple[Op, Block]:
    block = Block((), tuple(ops))
    return _op("scf.for", regions=(Region((block,)),)), block


def test_a_load_after_the_dot_moves_with_its_address() -> None:
    k = _op("tt.load")
    dot = _op("tt.dot", k.results[0])
    soft = _op("math.exp2", dot.results[0])
    addr = _op("tt.addptr")
    v = _op("tt.load", addr.results[0])
    dot2 = _op("tt.dot", soft.results[0], v.results[0])
    loop, block = _loop([k, dot, soft, addr, v, dot2, _op("scf.yield")])
    order = loop_schedule.loads_first(loop, block, dot)
    assert order is not None
    assert [o.name for o in order] == ["tt.load", "tt.addptr", "tt.load", "tt.dot",
                                       "math.exp2", "tt.dot", "scf.yield"]


def test_a_load_that_needs_the_dot_stays() -> None:
    dot = _op("tt.dot")
    idx = _op("arith.fptosi", dot.results[0])
    v = _op("tt.load", idx.results[0])
    loop, block = _loop([dot, idx, v, _op("scf.yield")])
    assert loop_schedule.loads_first(loop, block, dot) is None


@pytest.mark.parametrize("writer", ["tt.store", "tt.atomic_rmw", "tt.call"])
def test_a_body_that_writes_memory_keeps_its_order(writer: str) -> None:
    dot = _op("tt.dot")
    addr = _op("tt.addptr")
    v = _op("tt.load", addr.results[0])
    loop, block = _loop([dot, _op(writer), addr, v, _op("scf.yield")])
    assert loop_schedule.loads_first(loop, block, dot) is None
