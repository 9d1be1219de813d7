"""Row softmax and layer norm, the workloads of Triton's tutorials 02 and 05, written for
msltrans: the forward and, for layer norm, the backward (dx with a spin-locked partial-sum
reduction, then the dw/db column sums). Tested in tests/e2e/workloads/test_softmax_layernorm.py;
the GPU proxy times the softmax and the layer-norm forward.

The tutorials' compiler-facing shape: a persistent program striding over rows through
`tl.range(..., num_stages=...)`, rows masked to a power-of-two block with `-inf` padding;
three chunked passes over a row with fp32 partial sums; the backward's `atomic_cas` spin
lock, first-writer flag, `debug_barrier` and `atomic_xchg` release; a masked 2-D
accumulation reduced along axis 0.
"""

from __future__ import annotations

import triton
import triton.language as tl

# ---- softmax ------------------------------------------------------------------------------


@triton.jit
def row_softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                       BLOCK: tl.constexpr, STAGES: tl.constexpr = None):
    """softmax along each row of an [n_rows, n_cols] matrix. However many programs are
    launched stride over the rows (program p takes rows p, p + P, p + 2P, ...); one row fits
    in one BLOCK >= n_cols, its padding loaded as -inf so it adds exp(-inf) = 0."""
    for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=STAGES):
        cols = tl.arange(0, BLOCK)
        in_row = cols < n_cols
        x = tl.load(in_ptr + r * in_stride + cols, mask=in_row, other=-float("inf"))
        shifted = x - tl.max(x, axis=0)  # <= 0 everywhere: exp cannot overflow
        e = tl.exp(shifted)
        total = tl.sum(e, axis=0)
        tl.store(out_ptr + r * out_stride + cols, e / total, mask=in_row)


# ---- layer norm ---------------------------------------------------------------------------


@triton.jit
def layer_norm_fwd_rows(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, row_stride, N, eps,
                        BLOCK: tl.constexpr):
    """y = (x - mean) * rstd * w + b along each row, one program per row, the row read in
    BLOCK-wide chunks in three passes (sum; squared deviations; normalise), fp32 throughout;
    mean and rstd are kept for the backward."""
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    sums = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        sums += tl.load(x_row + cols, mask=cols < N, other=0.).to(tl.float32)
    mean = tl.sum(sums, axis=0) / N
    squares = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        dev = tl.load(x_row + cols, mask=cols < N, other=0.).to(tl.float32)
        dev = tl.where(cols < N, dev - mean, 0.)  # the padding must not add mean**2
        squares += dev * dev
    rstd = 1 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        inside = cols < N
        w = tl.load(w_ptr + cols, mask=inside)
        b = tl.load(b_ptr + cols, mask=inside)
        x = tl.load(x_row + cols, mask=inside, other=0.).to(tl.float32)
        tl.store(y_row + cols, (x - mean) * rstd * w + b, mask=inside)


@triton.jit
def layer_norm_bwd_dx_rows(dx_ptr, dy_ptr, dw_part_ptr, db_part_ptr, x_ptr, w_ptr, mean_ptr,
                           rstd_ptr, locks_ptr, row_stride, N, GROUPS: tl.constexpr,
                           BLOCK_N: tl.constexpr):
    """dx of one row (one program per row, the row in one BLOCK_N), then the row's dy * xhat
    and dy added into the partial dw/db rows of its group (row % GROUPS). `locks_ptr` holds
    GROUPS spin locks followed by GROUPS "written" flags: the first program of a group to
    hold the lock stores its partials, later ones add theirs to what is there."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    inside = cols < N
    x = tl.load(x_ptr + row * row_stride + cols, mask=inside, other=0).to(tl.float32)
    dy = tl.load(dy_ptr + row * row_stride + cols, mask=inside, other=0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=inside).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(inside, (x - mean) * rstd, 0.)
    wdy = tl.where(inside, w * dy, 0.)
    # dx = rstd * (wdy - mean(xhat * wdy) * xhat - mean(wdy))
    c_xhat = tl.sum(xhat * wdy, axis=0) / N
    c_one = tl.sum(wdy, axis=0) / N
    tl.store(dx_ptr + row * row_stride + cols, (wdy - (xhat * c_xhat + c_one)) * rstd,
             mask=inside)
    # This row's share of dw and db, in fp32 until the store rounds it to the buffer's type.
    dw_row = dy * xhat
    db_row = dy
    group = row % GROUPS
    lock = locks_ptr + group
    written = locks_ptr + GROUPS + group
    dw_at = dw_part_ptr + group * N + cols
    db_at = db_part_ptr + group * N + cols
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    if tl.load(written) == 0:
        tl.atomic_xchg(written, 1)
    else:
        dw_row += tl.load(dw_at, mask=inside)
        db_row += tl.load(db_at, mask=inside)
    tl.store(dw_at, dw_row, mask=inside)
    tl.store(db_at, db_row, mask=inside)
    # Every thread's stores must be done before any thread hands the lock on.
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


@triton.jit
def layer_norm_bwd_sum_groups(dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, GROUPS, N,
                              BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr):
    """dw, db = column sums of the [GROUPS, N] partial rows, BLOCK_N columns per program,
    BLOCK_G partial rows per step into a 2-D fp32 accumulator reduced at the end."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros((BLOCK_G, BLOCK_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_G, BLOCK_N), dtype=tl.float32)
    for g0 in range(0, GROUPS, BLOCK_G):
        groups = g0 + tl.arange(0, BLOCK_G)
        inside = (groups[:, None] < GROUPS) & (cols[None, :] < N)
        at = groups[:, None] * N + cols[None, :]
        dw += tl.load(dw_part_ptr + at, mask=inside, other=0.)
        db += tl.load(db_part_ptr + at, mask=inside, other=0.)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0), mask=cols < N)
    tl.store(db_ptr + cols, tl.sum(db, axis=0), mask=cols < N)
