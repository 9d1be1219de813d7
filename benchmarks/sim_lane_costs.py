"""What one lane pays per SIMD-group operation in the CPU simulator's execution model.

    python benchmarks/sim_lane_costs.py [--repeat 5] [--threads 1]

The simulator runs every Metal thread as its own fiber (docs/sim-execution.md, "Execution
model"), so each lane pays for every shuffle, reduction, barrier and simdgroup_matrix op
separately. This script times small MSL kernels that do nothing but one such operation in a
loop, and prints nanoseconds per lane and operation: the floor of the per-lane model, and
the yardstick for running a simdgroup as one instance (docs/dev-notes/sim-lanes.md).

Each kernel runs with two loop counts; the difference, divided by the extra lane-operations,
removes dispatch and start-up costs. Threadgroups of 32 threads (one simdgroup) and 256 (8
simdgroups) show whether the cost depends on how many lanes' frames cycle through the cache.
Every output is checked against a float64 model of the same loop, so a timing is only
printed for a kernel that computed the right thing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

SOURCE = r"""
#include <metal_stdlib>
using namespace metal;

// n iterations of a multiply-add, each after `step` (nothing: what plain per-lane code
// costs per iteration; a barrier).
#define AFFINE_LOOP(name, step)                                                          \
    kernel void name(device float *out [[buffer(0)]], constant uint &n [[buffer(1)]],    \
                     uint tid [[thread_position_in_grid]]) {                             \
        float x = float(tid & 31u);                                                      \
        for (uint i = 0; i < n; ++i) {                                                   \
            step;                                                                        \
            x = x * 0.5f + 1.0f;                                                         \
        }                                                                                \
        out[tid] = x;                                                                    \
    }
AFFINE_LOOP(plain, (void)0)
AFFINE_LOOP(sg_barrier, simdgroup_barrier(mem_flags::mem_none))
AFFINE_LOOP(tg_barrier, threadgroup_barrier(mem_flags::mem_threadgroup))

kernel void shuffle_xor(device float *out [[buffer(0)]], constant uint &n [[buffer(1)]],
                        uint tid [[thread_position_in_grid]]) {
    float x = float(tid & 31u);
    for (uint i = 0; i < n; ++i) x = simd_shuffle_xor(x, ushort(1u << (i % 5u)));
    out[tid] = x;
}

kernel void reduce_max(device float *out [[buffer(0)]], constant uint &n [[buffer(1)]],
                       uint tid [[thread_position_in_grid]]) {
    float x = float(tid & 31u);
    for (uint i = 0; i < n; ++i) x = simd_max(x) - float(i & 1u);
    out[tid] = x;
}

// An accumulator chain c = a * b + c of 8x8 fp32 matrices (a = b = identity / 2).
kernel void mma_chain(device float *out [[buffer(0)]], constant uint &n [[buffer(1)]],
                      uint tid [[thread_position_in_grid]],
                      uint sg [[simdgroup_index_in_threadgroup]],
                      uint group [[threadgroup_position_in_grid]],
                      uint sgs [[simdgroups_per_threadgroup]]) {
    simdgroup_float8x8 a = simdgroup_float8x8(0.5f), b = simdgroup_float8x8(0.5f);
    simdgroup_float8x8 c = simdgroup_float8x8(1.0f);
    for (uint i = 0; i < n; ++i) simdgroup_multiply_accumulate(c, a, b, c);
    simdgroup_store(c, out + (group * sgs + sg) * 64u, 8);
}

// The matmul's inner loop (msltrans/workloads/dot_kernels.py's ieee matmul, simdgroup path): per
// step, 4 + 4 operands loaded from threadgroup memory and a 4x4 grid of accumulator tiles
// (a = b = identity / 2, so every tile is exactly n / 4 times the identity).
kernel void mma_tiles(device float *out [[buffer(0)]], constant uint &n [[buffer(1)]],
                      uint lid [[thread_index_in_threadgroup]],
                      uint size [[threads_per_threadgroup]],
                      uint sg [[simdgroup_index_in_threadgroup]],
                      uint group [[threadgroup_position_in_grid]],
                      uint sgs [[simdgroups_per_threadgroup]]) {
    threadgroup float half_eye[64];
    for (uint j = lid; j < 64u; j += size) half_eye[j] = j % 9u == 0u ? 0.5f : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_float8x8 acc[4][4];
    for (uint i = 0; i < 4u; ++i)
        for (uint j = 0; j < 4u; ++j)
            acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint step = 0; step < n / 16u; ++step) {
        simdgroup_float8x8 fa[4], fb[4];
        for (uint i = 0; i < 4u; ++i) simdgroup_load(fa[i], half_eye, 8);
        for (uint j = 0; j < 4u; ++j) simdgroup_load(fb[j], half_eye, 8);
        for (uint i = 0; i < 4u; ++i)
            for (uint j = 0; j < 4u; ++j)
                simdgroup_multiply_accumulate(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    device float *mine = out + (group * sgs + sg) * 1024u;
    for (uint i = 0; i < 4u; ++i)
        for (uint j = 0; j < 4u; ++j) simdgroup_store(acc[i][j], mine + (4u * i + j) * 64u, 8);
}

// A simdgroup_load from threadgroup memory and a read of the lane's elements.
kernel void matrix_load(device float *out [[buffer(0)]], constant uint &n [[buffer(1)]],
                        uint tid [[thread_position_in_grid]],
                        uint lid [[thread_index_in_threadgroup]],
                        uint size [[threads_per_threadgroup]]) {
    threadgroup float tile[64];
    for (uint j = lid; j < 64u; j += size) tile[j] = float(j);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float x = 0.0f;
    for (uint i = 0; i < n; ++i) {
        simdgroup_float8x8 m;
        simdgroup_load(m, tile, 8);
        x += m.thread_elements()[0];
    }
    out[tid] = x;
}
"""


def _lanes(threads: int) -> np.ndarray:
    return (np.arange(threads) % 32).astype(np.float64)


def _affine(x: np.ndarray, n: int) -> np.ndarray:
    for _ in range(n):
        x = x * 0.5 + 1.0
    return x


def _expect_plain(threads: int, group: int, n: int) -> np.ndarray:
    return _affine(_lanes(threads), n)


def _expect_shuffle(threads: int, group: int, n: int) -> np.ndarray:
    lane = np.arange(threads) % 32
    src = lane.copy()
    for i in range(n):
        src = src ^ (1 << (i % 5))
    return (np.arange(threads) - lane + src) % 32 + 0.0


def _expect_reduce(threads: int, group: int, n: int) -> np.ndarray:
    x = _lanes(threads).reshape(-1, 32)
    for i in range(n):
        x = np.repeat(x.max(axis=1, keepdims=True), 32, axis=1) - float(i & 1)
    return x.reshape(-1)


def _expect_mma(threads: int, group: int, n: int) -> np.ndarray:
    c = np.eye(8)
    for _ in range(n):
        c = 0.25 * np.eye(8) @ np.eye(8) + c
    return np.tile(c.reshape(-1), threads // 32)


def _expect_tiles(threads: int, group: int, n: int) -> np.ndarray:
    tile = (0.25 * (n // 16) * np.eye(8)).reshape(-1)
    return np.tile(tile, threads // 32 * 16)


def _expect_load(threads: int, group: int, n: int) -> np.ndarray:
    lane = np.arange(threads) % 32
    q = lane // 4
    row = (q & 4) + (lane // 2) % 4
    col0 = (q & 2) * 2 + (lane % 2) * 2
    return (row * 8 + col0) * float(n)


@dataclass(frozen=True)
class Op:
    kernel: str
    what: str
    expect: Callable[[int, int, int], np.ndarray]
    out_len: Callable[[int], int]
    counts: tuple[int, int]


OPS = [
    Op("plain", "plain code (one fma-free multiply-add)", _expect_plain, lambda t: t,
       (100, 20100)),
    Op("shuffle_xor", "simd_shuffle_xor", _expect_shuffle, lambda t: t, (100, 4100)),
    Op("reduce_max", "simd_max", _expect_reduce, lambda t: t, (100, 4100)),
    Op("sg_barrier", "simdgroup_barrier", _expect_plain, lambda t: t, (100, 4100)),
    Op("tg_barrier", "threadgroup_barrier", _expect_plain, lambda t: t, (100, 4100)),
    Op("mma_chain", "simdgroup_multiply_accumulate (c chain)", _expect_mma,
       lambda t: t // 32 * 64, (32, 288)),
    Op("mma_tiles", "simdgroup_multiply_accumulate (4x4 tiles, 8 loads per 16: a matmul step)",
       _expect_tiles, lambda t: t // 32 * 1024, (32, 288)),
    Op("matrix_load", "simdgroup_load + thread_elements()", _expect_load, lambda t: t,
       (32, 288)),
]


def _time(kernel, op: Op, groups: int, group: int, n: int, repeat: int) -> float:
    import torch

    threads = groups * group
    out = torch.zeros(op.out_len(threads), dtype=torch.float32)
    count = torch.tensor([n], dtype=torch.int32)
    kernel(out, count, threads=threads, group_size=group)
    want = op.expect(threads, group, n)
    got = out.numpy().astype(np.float64)
    if not np.array_equal(got, want.astype(np.float32).astype(np.float64)):
        bad = int(np.flatnonzero(got != want.astype(np.float32))[0])
        raise AssertionError(f"{op.kernel} n={n} group={group}: element {bad} is {got[bad]}, "
                             f"expected {want[bad]}")
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        kernel(out, count, threads=threads, group_size=group)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per point (median)")
    parser.add_argument("--threads", type=int, default=1,
                        help="simulator worker threads (MSLTRANS_SIM_THREADS; default 1, so "
                             "figures are per core)")
    parser.add_argument("--groups", type=int, default=8, help="threadgroups per dispatch")
    args = parser.parse_args()
    os.environ["MSLTRANS_SIM_THREADS"] = str(args.threads)
    from msltrans.sim import compile_shader

    lib = compile_shader(SOURCE, "lane_costs.metal")
    sizes = (32, 256)
    print(f"ns per lane and operation ({args.threads} worker thread(s), {args.groups} "
          f"threadgroups, median of {args.repeat})\n")
    print("| operation | " + " | ".join(f"{s} threads/group" for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for op in OPS:
        cells = []
        for group in sizes:
            lo, hi = op.counts
            kernel = getattr(lib, op.kernel)
            t_lo = _time(kernel, op, args.groups, group, lo, args.repeat)
            t_hi = _time(kernel, op, args.groups, group, hi, args.repeat)
            per = (t_hi - t_lo) / (args.groups * group * (hi - lo)) * 1e9
            cells.append(f"{per:.1f}")
        print(f"| {op.what} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
