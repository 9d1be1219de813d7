"""A bitonic top-k over one row per program, carrying each value's index (the shape of the
argsort-based top-k kernels in FlagGems and of tl.sort/tl.topk), written for this project:
every compare-and-swap step splits the row into (outer, 2, inner) with a reshape, takes the
two halves with masked sums, and swaps bit patterns with an xor. Its TTGIR has thousands of
ops (N = 1024: 10 merge stages, 55 compare-and-swap steps, each ~40 ops on values and
indices), which makes it the large-kernel case of the compile-time benchmark.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _swap_step(x, ids, flip, i: tl.constexpr, n_dims: tl.constexpr):
    """Compare-and-swap the pairs 2**(n_dims - 1 - i) apart; `flip` reverses the order."""
    shape: tl.constexpr = [2**i, 2, 2 ** (n_dims - i - 1)]
    upper = tl.arange(0, 2)[None, :, None]
    xs = tl.reshape(x, shape)
    first = tl.reshape(tl.broadcast_to(tl.sum(xs * (1 - upper), 1)[:, None, :], shape), x.shape)
    second = tl.reshape(tl.broadcast_to(tl.sum(xs * upper, 1)[:, None, :], shape), x.shape)
    js = tl.reshape(ids, shape)
    first_id = tl.reshape(tl.broadcast_to(tl.sum(js * (1 - upper), 1)[:, None, :], shape),
                          x.shape)
    second_id = tl.reshape(tl.broadcast_to(tl.sum(js * upper, 1)[:, None, :], shape), x.shape)
    swap = (first > second) ^ flip
    # x is one of (first, second): xor with both gives the other one, bit for bit
    bits = x.to(tl.int32, bitcast=True)
    pair = first.to(tl.int32, bitcast=True) ^ second.to(tl.int32, bitcast=True)
    x = (bits ^ tl.where(swap, pair, 0)).to(tl.float32, bitcast=True)
    ids = ids ^ tl.where(swap, first_id ^ second_id, 0)
    return x, ids


@triton.jit
def _merge(x, ids, stage: tl.constexpr, alternate: tl.constexpr, descending: tl.constexpr,
           n_dims: tl.constexpr):
    """Merge bitonic runs of 2**stage elements: alternately ordered runs of 2**stage, or
    (alternate=False) one run in the final order."""
    if alternate:
        shape: tl.constexpr = [2 ** (n_dims - 1 - stage), 2, 2**stage]
        flip = tl.reshape(tl.broadcast_to(tl.arange(0, 2)[None, :, None], shape), x.shape)
        flip = flip != 0
    else:
        flip = tl.full(x.shape, descending, tl.int1)
    for i in tl.static_range(stage):
        x, ids = _swap_step(x, ids, flip, n_dims - stage + i, n_dims)
    return x, ids


@triton.jit
def topk_kernel(x_ptr, values_ptr, indices_ptr, K: tl.constexpr, N: tl.constexpr,
                LOG_N: tl.constexpr):
    """The K largest values of each row of x (rows of N = 2**LOG_N), largest first, and
    their column indices."""
    row = tl.program_id(0)
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + row * N + offs)
    ids = offs
    for stage in tl.static_range(1, LOG_N):
        x, ids = _merge(x, ids, stage, True, True, LOG_N)
    x, ids = _merge(x, ids, LOG_N, False, True, LOG_N)
    tl.store(values_ptr + row * K + offs, x, mask=offs < K)
    tl.store(indices_ptr + row * K + offs, ids, mask=offs < K)
