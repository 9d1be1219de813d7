"""Differential suite, 2-D: the elementwise ops on broadcast tiles (a column against a row)
with masks on both edges and a grid of several programs, against the same references as
the 1-D suites (so layouts, broadcasting and masking cannot change a single bit)."""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from tests.e2e.test_diff_float import reference as float_reference
from tests.e2e.test_diff_int import reference as int_reference
from tests.support.diff import TRITON_PTR, assert_same_bits, compile_typed, launch
from tests.support.values import edge_values


@triton.jit
def tile_kernel(col_ptr, row_ptr, out_ptr, M, N, IS_INT: tl.constexpr, BM: tl.constexpr,
                BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    a = tl.load(col_ptr + rm, mask=rm < M)[:, None]
    b = tl.load(row_ptr + rn, mask=rn < N)[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm[:, None] * N + rn[None, :]
    if IS_INT:
        tl.store(out_ptr + offs, a // b, mask=mask)
        tl.store(out_ptr + M * N + offs, a >> b, mask=mask)
    else:
        tl.store(out_ptr + offs, tl.maximum(a, b), mask=mask)
        tl.store(out_ptr + M * N + offs, tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL),
                 mask=mask)


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint32", "float32", "float16"])
def test_broadcast_tiles(dtype: str) -> None:
    col = edge_values(dtype)
    row = np.concatenate([edge_values(dtype), np.arange(3, 9).astype(dtype)])
    M, N = len(col), len(row)
    is_int = np.dtype(dtype).kind in "iu"
    out = np.zeros(2 * M * N, dtype)
    ptr = TRITON_PTR[dtype]
    sig = {"col_ptr": ptr, "row_ptr": ptr, "out_ptr": ptr, "M": "i32", "N": "i32"}
    program = compile_typed(tile_kernel, sig, {"IS_INT": is_int, "BM": 16, "BN": 16})
    launch(program, (triton.cdiv(M, 16), triton.cdiv(N, 16)), col, row, out, M, N)
    got = out.reshape(2, M, N)
    a, b = (x.ravel() for x in np.meshgrid(col, row, indexing="ij"))
    if is_int:
        bits = np.iinfo(dtype).bits
        for k, op in enumerate(("div", "shr")):
            want = [int_reference(op, int(x), int(y), int(y), dtype) % 2**bits
                    for x, y in zip(a, b, strict=True)]
            want = np.array(want, dtype=f"uint{bits}").view(dtype).reshape(M, N)
            assert_same_bits(got[k], want, dtype, op)
    else:
        for k, op in enumerate(("max", "min_nan")):
            want = float_reference(op, a, b, b, dtype).reshape(M, N)
            assert_same_bits(got[k], want, dtype, op)
