"""`tl.range(..., flatten=True)`: the TTGIR pipeline fuses the nest into one scf.for.

Checks that the fusion pass ran (loop depth of the walked TTGIR) and that the fused loop —
a counter-driven scf.for with scf.if prologues/epilogues and select-carried state — still
gives exactly the nested loops' results (numpy reference, i32 wrap-around).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.ir.model import Op
from msltrans.ir.walker import read_module
from msltrans.toolchain import to_ttgir
from tests.support.run_kernel import run_kernel, signature_of


def _loop_depth(ops: tuple[Op, ...]) -> int:
    """Deepest nesting of scf.for / scf.while among `ops` (through every region)."""
    depth = 0
    for op in ops:
        inner = max((_loop_depth(b.ops) for r in op.regions for b in r.blocks), default=0)
        depth = max(depth, inner + (op.name in ("scf.for", "scf.while")))
    return depth


def _ttgir(fn: Any, args: tuple, num_warps: int = 4, **constexprs: Any) -> tuple[str, int]:
    live = to_ttgir(fn, signature_of(fn, args, constexprs), constexprs, num_warps)
    module = read_module(live)
    return str(live), max(_loop_depth(f.body.blocks[0].ops) for f in module.functions)


@triton.jit
def counter_kernel(ub, out_ptr):
    k = 1
    for i in tl.range(0, ub, flatten=True):
        for j in tl.range(0, ub):
            tl.store(out_ptr + i * 32 + j, k)
            k += 1


@pytest.mark.parametrize("ub", [10, 1, 0, -3, 32])
def test_flattened_counter(ub: int) -> None:
    text, depth = _ttgir(counter_kernel, (ub, np.zeros(1, np.int32)), num_warps=1)
    assert text.count("scf.for") == 1 and depth == 1  # the pass fused the nest
    out = np.zeros((32, 32), np.int32)
    run_kernel(counter_kernel, (1,), ub, out, num_warps=1)
    want = np.zeros((32, 32), np.int32)
    n = max(ub, 0)
    want[:n, :n] = np.arange(1, n * n + 1).reshape(n, n)
    assert out.tobytes() == want.tobytes()


@triton.jit
def logue_kernel(x_ptr, out_ptr, rows_ptr, n_outer, n_inner, BLOCK: tl.constexpr,
                 FLATTEN: tl.constexpr):
    # A prologue (a load), an inner loop carrying a tensor and reading the outer index, and
    # an epilogue (a store and an outer carry): the fused loop must run each exactly once
    # per outer iteration, in order.
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for i in tl.range(0, n_outer, flatten=FLATTEN):
        row = tl.load(x_ptr + i * BLOCK + offs)
        part = tl.zeros([BLOCK], dtype=tl.int32)
        for j in tl.range(1, n_inner + 1):
            part = part * 3 + row + i * j
        acc = acc ^ part
        tl.store(rows_ptr + i * BLOCK + offs, part)
    tl.store(out_ptr + offs, acc)


def _ref_logue(x: np.ndarray, n_outer: int, n_inner: int) -> tuple[np.ndarray, np.ndarray]:
    wrap = np.int64(0xFFFFFFFF)
    acc = np.zeros(x.shape[1], np.int64)
    rows = np.full(x.shape, -7, np.int64)
    for i in range(n_outer):
        part = np.zeros(x.shape[1], np.int64)
        for j in range(1, n_inner + 1):
            part = (part * 3 + x[i] + i * j) & wrap
        acc ^= part
        rows[i] = part
    as_i32 = lambda a: (a & wrap).astype(np.uint32).view(np.int32)  # noqa: E731
    return as_i32(acc), as_i32(rows)


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize(("n_outer", "n_inner"), [(5, 7), (3, 1), (4, 0), (0, 3), (6, 23)])
def test_flattened_prologue_epilogue(num_warps: int, n_outer: int, n_inner: int) -> None:
    block = 64
    rng = np.random.default_rng(n_outer * 10 + n_inner)
    x = rng.integers(-2**31, 2**31, (8, block), dtype=np.int64).astype(np.int32)
    out = np.full(block, 12345, np.int32)
    rows = np.full((8, block), -7, np.int32)
    args = (x, out, rows, n_outer, n_inner)
    _, depth = _ttgir(logue_kernel, args, num_warps, BLOCK=block, FLATTEN=True)
    assert depth == 1
    run_kernel(logue_kernel, (1,), *args, num_warps=num_warps, BLOCK=block, FLATTEN=True)
    want_acc, want_rows = _ref_logue(x.astype(np.int64), n_outer, n_inner)
    assert out.tobytes() == want_acc.tobytes()
    assert rows.tobytes() == want_rows.tobytes()


def test_without_flatten_the_nest_stays() -> None:
    args = (np.zeros((1, 64), np.int32), np.zeros(64, np.int32), np.zeros((1, 64), np.int32),
            2, 2)
    _, depth = _ttgir(logue_kernel, args, 4, BLOCK=64, FLATTEN=False)
    assert depth == 2
