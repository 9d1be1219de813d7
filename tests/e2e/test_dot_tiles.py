"""The simdgroup path at the tile shapes real configurations use, bit for bit.

128x64, 64x128 (4 simdgroups) and 128x128 (8 simdgroups) K loops keep their accumulators in
simdgroup matrices: only A and B are staged per K step, so they fit in 32 KB even when C
does not; C then moves through scratch in row passes before the loop when it starts from a
loaded value, and leaves from the fragments straight to device memory (direct_store.py). More
simdgroups than work units leave some idle (a branch uniform per simdgroup). Every result
equals the in-order fp32 fma chain (tests/support/fma.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from msltrans.workloads.dot_kernels import k_loop_variant_kernel
from tests.e2e.dot_support import TRITON_PTR, compile_with, dot_stats, randn, run, same_bits
from tests.support.fma import fma_chain_matmul

# C moves in row passes that fit in the loop's A/B region (lower/dot/simdgroup.pass_rows):
# the prologue adds no threadgroup memory of its own, the direct epilogue none at all.
CASES = [  # (M, N, BK, num_warps, dtype, mode, passes)
    (128, 64, 16, 4, "float16", "plain", 4),   # 8,448 bytes of A/B: passes of 32 rows
    (64, 128, 16, 4, "float32", "init", 2),
    (128, 128, 16, 8, "float16", "plain", 4),
    (128, 128, 8, 8, "float32", "init", 4),
    (64, 64, 16, 8, "float32", "plain", 2),   # 4 units for 8 simdgroups: half of them idle
]


@pytest.mark.parametrize(("m", "n", "bk", "num_warps", "dtype", "mode", "passes"), CASES)
def test_large_tiles_resident(m: int, n: int, bk: int, num_warps: int, dtype: str, mode: str,
                              passes: int) -> None:
    k = 2 * bk
    a, b = randn((m, k), dtype, 11), randn((k, n), dtype, 12)
    c = randn((m, n), "float32", 13)
    out, aux = np.full((m, n), np.nan, np.float32), np.zeros(1, np.float32)
    sig = {"a_ptr": TRITON_PTR[dtype], "b_ptr": TRITON_PTR[dtype], "c_ptr": "*fp32",
           "out_ptr": "*fp32", "aux_ptr": "*fp32", "K": "i32"}
    program = compile_with(k_loop_variant_kernel, sig, num_warps, M=m, N=n, BK=bk, MODE=mode)
    stats = dot_stats(program)[0]
    assert (stats["path"], stats["c"], int(stats["passes"])) == ("simdgroup", "resident", passes)
    assert stats["epilogue"] == "direct"
    run(program, (1,), a, b, c, out, aux, k)
    init = c if mode == "init" else np.zeros((m, n), np.float32)
    assert same_bits(out, fma_chain_matmul(a.astype(np.float32), b.astype(np.float32), init))
