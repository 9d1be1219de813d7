"""The kernels the speed benchmarks time, written for this project.

Each one does the work of a common Triton program (the shapes of Triton's tutorials 01, 02,
03 and 05, and a row reduction) with the same stress on the compiler: 1-D and 2-D blocked
layouts, masks on ragged edges, loops over column blocks, a K loop with a grouped program
order. They run unchanged on Triton's CUDA backend (the reference side of the GPU proxy) and
through msltrans. The softmax, layer-norm and attention kernels are not written here: they
are the shared workloads' (msltrans/workloads: `row_softmax_kernel`, `layer_norm_fwd_rows`,
`attn_fwd`, the tutorial-06 `flash_attn_fwd`), so the proxy times exactly the kernels the
tests check.
"""

from __future__ import annotations

import triton
import triton.language as tl

# The workloads' own kernels the proxy's cases name (getattr on this module): the plain and
# tutorial 06's attention forwards, tutorial 02's row softmax, tutorial 05's layer norm.
from msltrans.workloads.attention import flash_attn_bwd, flash_attn_fwd  # noqa: F401
from msltrans.workloads.attention_plain import attn_fwd  # noqa: F401
from msltrans.workloads.softmax_layernorm import layer_norm_fwd_rows, row_softmax_kernel  # noqa: F401


@triton.jit
def vadd(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # out[i] = a[i] + b[i] over one block of BLOCK elements per program.
    start = tl.program_id(0) * BLOCK
    idx = start + tl.arange(0, BLOCK)
    keep = idx < n
    a = tl.load(a_ptr + idx, mask=keep)
    b = tl.load(b_ptr + idx, mask=keep)
    tl.store(out_ptr + idx, a + b, mask=keep)




@triton.jit
def row_sums(x_ptr, out_ptr, stride, cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    # ROWS rows per program, summed along the columns in BLOCK-wide chunks.
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    acc = tl.zeros([ROWS, BLOCK], dtype=tl.float32)
    for c0 in range(0, cols, BLOCK):
        c = c0 + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + rows[:, None] * stride + c[None, :], mask=c[None, :] < cols,
                       other=0.0)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1))


@triton.jit
def tiled_matmul(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    # C = A @ B, one BM x BN tile per program. Programs are ordered in groups of GROUP tile
    # rows so that neighbouring programs share A rows and B columns in the cache; rows and
    # columns past the edge wrap (modulo) and are masked only at the store; K is masked.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP * tiles_n
    group = pid // per_group
    row0 = group * GROUP
    rows_here = min(tiles_m - row0, GROUP)
    tm = row0 + (pid % per_group) % rows_here
    tn = (pid % per_group) // rows_here
    rm = (tm * BM + tl.arange(0, BM)) % M
    rn = (tn * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_tile = a_ptr + rm[:, None] * s_am + rk[None, :] * s_ak
    b_tile = b_ptr + rk[:, None] * s_bk + rn[None, :] * s_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BK)):
        left = K - k0 * BK
        a = tl.load(a_tile, mask=rk[None, :] < left, other=0.0)
        b = tl.load(b_tile, mask=rk[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_tile += BK * s_ak
        b_tile += BK * s_bk
    out = acc.to(c_ptr.dtype.element_ty)
    cm = tm * BM + tl.arange(0, BM)
    cn = tn * BN + tl.arange(0, BN)
    c_tile = c_ptr + cm[:, None] * s_cm + cn[None, :] * s_cn
    tl.store(c_tile, out, mask=(cm[:, None] < M) & (cn[None, :] < N))
