"""Triton tutorials 02 (fused softmax) and 05 (layer norm), kernels copied unmodified from
triton-lang/triton python/tutorials/, launched through the test helper against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from tests.support.run_kernel import run_kernel

# ---- tutorial 02: fused softmax (verbatim) ----------------------------------------------


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    # starting row of the program
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        # The stride represents how much we need to increase the pointer to advance 1 row
        row_start_ptr = input_ptr + row_idx * input_row_stride
        # The block size is the next power of two greater than n_cols, so we can fit each
        # row in a single block
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        # Load the row into SRAM, using a mask since BLOCK_SIZE may be > than n_cols
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        # Subtract maximum for numerical stability
        row_minus_max = row - tl.max(row, axis=0)
        # Note that exponentiation in Triton is fast but approximate (i.e., think __expf in CUDA)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        # Write back output to DRAM
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


# ---- tutorial 05: layer norm (verbatim) -------------------------------------------------


@triton.jit
def _layer_norm_fwd_fused(
    X,  # pointer to the input
    Y,  # pointer to the output
    W,  # pointer to the weights
    B,  # pointer to the biases
    Mean,  # pointer to the mean
    Rstd,  # pointer to the 1/std
    stride,  # how much to increase the pointer when moving by 1 row
    N,  # number of columns in X
    eps,  # epsilon to avoid division by zero
    BLOCK_SIZE: tl.constexpr,
):
    # Map the program id to the row of X and Y it should compute.
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    # Compute mean
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    # Compute variance
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    # Write mean / rstd
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    # Normalize and apply linear transformation
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        # Write output
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def _layer_norm_bwd_dx_fused(DX,  # pointer to the input gradient
                             DY,  # pointer to the output gradient
                             DW,  # pointer to the partial sum of weights gradient
                             DB,  # pointer to the partial sum of biases gradient
                             X,  # pointer to the input
                             W,  # pointer to the weights
                             Mean,  # pointer to the mean
                             Rstd,  # pointer to the 1/std
                             Lock,  # pointer to the lock
                             stride,  # how much to increase the pointer when moving by 1 row
                             N,  # number of columns in X
                             GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    # Map the program id to the elements of X, DX, and DY it should compute.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    # Offset locks and weights/biases gradient pointer for parallel reduction
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    # Load data to SRAM
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    # Compute dx
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    # Write dx
    tl.store(DX + cols, dx, mask=mask)
    # Accumulate partial sums for dw/db
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    # First store doesn't accumulate
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)

    # need a barrier to ensure all threads finished before
    # releasing the lock
    tl.debug_barrier()

    # Release the lock
    tl.atomic_xchg(Lock, 0)


@triton.jit
def _layer_norm_bwd_dwdb(DW,  # pointer to the partial sum of weights gradient
                         DB,  # pointer to the partial sum of biases gradient
                         FINAL_DW,  # pointer to the weights gradient
                         FINAL_DB,  # pointer to the biases gradient
                         M,  # GROUP_SIZE_M
                         N,  # number of columns
                         BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    # Map the program id to the elements of DW and DB it should compute.
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    # Iterate through the rows of DW and DB to sum the partial sums.
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.)
        db += tl.load(DB + offs, mask=mask, other=0.)
    # Write the final sum to the output.
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


# ---- tests ------------------------------------------------------------------------------


@pytest.mark.parametrize(("n_rows", "n_cols", "programs", "num_warps"),
                         [(13, 781, 4, 4), (5, 100, 5, 1), (3, 2500, 2, 16)])
def test_fused_softmax(n_rows: int, n_cols: int, programs: int, num_warps: int) -> None:
    torch.manual_seed(0)
    x = torch.randn(n_rows, n_cols, dtype=torch.float32).numpy()
    y = np.zeros_like(x)
    run_kernel(softmax_kernel, (programs,), y, x, n_cols, n_cols, n_rows, n_cols,
               num_warps=num_warps, BLOCK_SIZE=triton.next_power_of_2(n_cols), num_stages=1)
    ref = torch.softmax(torch.from_numpy(x), dim=1).numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-7)


def _layer_norm_data(M: int, N: int) -> tuple[np.ndarray, ...]:
    torch.manual_seed(1)
    w = torch.rand(N, dtype=torch.float32)
    b = torch.rand(N, dtype=torch.float32)
    x = -2.3 + 0.5 * torch.randn(M, N, dtype=torch.float32)
    dy = 0.1 * torch.randn(M, N, dtype=torch.float32)
    return x.numpy(), w.numpy(), b.numpy(), dy.numpy()


@pytest.mark.parametrize(("M", "N", "block", "num_warps"), [(7, 1000, 1024, 4),
                                                              (3, 3000, 1024, 8)])
def test_layer_norm_forward(M: int, N: int, block: int, num_warps: int) -> None:
    x, w, b, _ = _layer_norm_data(M, N)
    y, mean, rstd = np.zeros_like(x), np.zeros(M, np.float32), np.zeros(M, np.float32)
    eps = 1e-5
    run_kernel(_layer_norm_fwd_fused, (M,), x, y, w, b, mean, rstd, N, N, eps,
               num_warps=num_warps, BLOCK_SIZE=block)
    ref = torch.nn.functional.layer_norm(torch.from_numpy(x), (N,), torch.from_numpy(w),
                                         torch.from_numpy(b), eps).numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mean, x.astype(np.float64).mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(rstd, 1 / np.sqrt(x.astype(np.float64).var(axis=1) + eps),
                               rtol=1e-4)


def test_layer_norm_backward() -> None:
    M, N, group, block = 9, 300, 4, 512
    x, w, b, dy = _layer_norm_data(M, N)
    eps = 1e-5
    xt = torch.from_numpy(x).requires_grad_(True)
    wt = torch.from_numpy(w).requires_grad_(True)
    bt = torch.from_numpy(b).requires_grad_(True)
    torch.nn.functional.layer_norm(xt, (N,), wt, bt, eps).backward(torch.from_numpy(dy))
    mean = x.astype(np.float64).mean(axis=1).astype(np.float32)
    rstd = (1 / np.sqrt(x.astype(np.float64).var(axis=1) + eps)).astype(np.float32)
    dx = np.zeros_like(x)
    part_dw, part_db = np.zeros((group, N), np.float32), np.zeros((group, N), np.float32)
    locks = np.zeros(2 * group, np.int32)
    run_kernel(_layer_norm_bwd_dx_fused, (M,), dx, dy, part_dw, part_db, x, w, mean, rstd,
               locks, N, N, num_warps=4, GROUP_SIZE_M=group, BLOCK_SIZE_N=block)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    # The kernel's spin locks must have been released (it runs to the end in every program).
    assert not locks[:group].any()
    dw, db = np.zeros(N, np.float32), np.zeros(N, np.float32)
    run_kernel(_layer_norm_bwd_dwdb, (triton.cdiv(N, 128),), part_dw, part_db, dw, db, group, N,
               num_warps=4, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)
    np.testing.assert_allclose(dw, wt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, bt.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_layer_norm_backward_fp16_partials_like_the_tutorial() -> None:
    """Tutorial 05's own configuration: fp16 data and fp16 partial-sum buffers, many rows per
    lock group. db/dw are checked against float64 sums with the tutorial's atol (1e-2).
    (The tutorial's script compares against torch's *CPU* fp16 layer_norm backward, which is
    itself off by 0.06 at M=1151, N=8192, so the unmodified script's assertion fails on CPU;
    docs/conformance-tutorials.md records the measurement.)"""
    M, N, group, block = 240, 1000, 16, 1024
    rng = np.random.default_rng(5)
    x = (-2.3 + 0.5 * rng.standard_normal((M, N))).astype(np.float16)
    w = rng.random(N).astype(np.float16)
    dy = (0.1 * rng.standard_normal((M, N))).astype(np.float16)
    eps = 1e-5
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    mean = x64.mean(axis=1)
    rstd = 1 / np.sqrt(x64.var(axis=1) + eps)
    dx = np.zeros_like(x)
    part_dw, part_db = np.zeros((group, N), np.float16), np.zeros((group, N), np.float16)
    locks = np.zeros(2 * group, np.int32)
    run_kernel(_layer_norm_bwd_dx_fused, (M,), dx, dy, part_dw, part_db, x, w,
               mean.astype(np.float32), rstd.astype(np.float32), locks, N, N, num_warps=4,
               GROUP_SIZE_M=group, BLOCK_SIZE_N=block)
    assert not locks[:group].any()
    assert (locks[group:] == 1).all()  # every group's "first store done" flag was set
    dw, db = np.zeros(N, np.float16), np.zeros(N, np.float16)
    run_kernel(_layer_norm_bwd_dwdb, (triton.cdiv(N, 128),), part_dw, part_db, dw, db, group, N,
               num_warps=4, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)
    xhat = (x64 - mean[:, None]) * rstd[:, None]
    np.testing.assert_allclose(db.astype(np.float64), dy64.sum(axis=0), rtol=0, atol=1e-2)
    np.testing.assert_allclose(dw.astype(np.float64), (dy64 * xhat).sum(axis=0), rtol=0,
                               atol=1e-2)
