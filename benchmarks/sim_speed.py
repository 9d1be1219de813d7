"""Speed of the CPU Metal simulator: compile (cold / cached) and run times.

    python benchmarks/sim_speed.py

Cold compiles use a fresh cache directory and a source no run has seen before. `cached`
rows load from the disk cache in a fresh process (a subprocess, timed inside it after its
imports): the first compile_shader there also probes the compiler (`clang --version`, part of
the cache key), a second source is the disk load alone. The issue's targets (cold compile
<= 0.3 s, cached <= 5 ms, vector add 1M <= 0.2 s on a 2-core machine) get an `ok` column.
"""

from __future__ import annotations

import os
import random
import resource
import subprocess
import sys
import tempfile
import time

os.environ["MSLTRANS_SIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="msltrans-bench-")

import numpy as np  # noqa: E402

import msltrans.sim as sim  # noqa: E402

VECTOR_ADD = """
#include <metal_stdlib>
using namespace metal;
kernel void vector_add(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                       device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = a[i] + b[i];  // SALT
}
"""

MATMUL = """
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;
// One simdgroup per 8x8 tile of C = A @ B (n x n, row major).
kernel void matmul(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]],
                   device float* C [[buffer(2)]], constant uint& n [[buffer(3)]],
                   uint2 tile [[threadgroup_position_in_grid]]) {
    simdgroup_float8x8 acc = simdgroup_float8x8(0.0f);
    for (uint k = 0; k < n; k += 8) {
        simdgroup_float8x8 a, b;
        simdgroup_load(a, A + tile.y * 8 * n + k, n);
        simdgroup_load(b, B + k * n + tile.x * 8, n);
        simdgroup_multiply_accumulate(acc, a, b, acc);
    }
    simdgroup_store(acc, C + tile.y * 8 * n + tile.x * 8, n);
}
"""

SOFTMAX = """
#include <metal_stdlib>
using namespace metal;
#define THREADS 256
// One threadgroup per row: simdgroup reductions, then across simdgroups in threadgroup memory.
kernel void softmax(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                    constant uint& cols [[buffer(2)]], uint row [[threadgroup_position_in_grid]],
                    uint lid [[thread_position_in_threadgroup]],
                    uint lane [[thread_index_in_simdgroup]],
                    uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float partial[THREADS / 32];
    device const float* in = x + row * cols;
    float m = -INFINITY;
    for (uint c = lid; c < cols; c += THREADS) m = max(m, in[c]);
    m = simd_max(m);
    if (lane == 0) partial[sg] = m;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    m = partial[0];
    for (uint s = 1; s < THREADS / 32; s++) m = max(m, partial[s]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float total = 0.0f;
    for (uint c = lid; c < cols; c += THREADS) total += exp(in[c] - m);
    total = simd_sum(total);
    if (lane == 0) partial[sg] = total;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    total = 0.0f;
    for (uint s = 0; s < THREADS / 32; s++) total += partial[s];
    for (uint c = lid; c < cols; c += THREADS) y[row * cols + c] = exp(in[c] - m) / total;
}
"""


# Run in a fresh interpreter: compile_shader of two sources the parent has cached on disk.
FRESH_PROCESS = """
import sys, time
import msltrans.sim as sim
first, second = sys.stdin.read().split("\\0")
start = time.perf_counter()
sim.compile_shader(first)
mid = time.perf_counter()
sim.compile_shader(second)
print(mid - start, time.perf_counter() - mid)
"""


def fresh_process_loads(first: str, second: str, repeat: int = 3) -> tuple[float, float]:
    """Best (first call, second call) seconds of compile_shader in a new process."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", FRESH_PROCESS], input=f"{first}\0{second}",
                             capture_output=True, text=True, check=True).stdout.split()
        best = (min(best[0], float(out[0])), min(best[1], float(out[1])))
    return best


def timed(fn, repeat: int = 3) -> float:
    """Best wall time; CPU time of the best run goes to LAST_CPU (the machine may be shared)."""
    global LAST_CPU
    best = float("inf")
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall = time.perf_counter() - start
        if wall < best:
            best, LAST_CPU = wall, time.process_time() - start_cpu
    return best


LAST_CPU = 0.0


# (row, target seconds): the targets docs/issue 2 states for this 2-core machine.
TARGETS = {"compile, cold (vector add)": 0.3,
           "compile, cached (fresh process, first call)": 0.005,
           "compile, cached (fresh process, disk load)": 0.005,
           "vector add 1M fp32": 0.2}


def main() -> None:
    rows: list[tuple[str, float, str]] = []
    sim.compile_shader(VECTOR_ADD.replace("SALT", "warm-up"))   # builds runtime and PCH once
    cold, cpu = [], []
    for _ in range(5):
        salt = str(random.getrandbits(64))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        sim.compile_shader(VECTOR_ADD.replace("SALT", salt))
        cold.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    rows.append(("compile, cold (vector add)", min(cold),
                 f"median {sorted(cold)[2]:.3f} s; clang CPU {min(cpu):.3f} s; "
                 f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"))
    source = VECTOR_ADD.replace("SALT", "cached")
    lib = sim.compile_shader(source)
    other = VECTOR_ADD.replace("SALT", "cached, second source")
    sim.compile_shader(other)
    first_call, disk_load = fresh_process_loads(source, other)
    rows.append(("compile, cached (fresh process, first call)", first_call,
                 "incl. the per-process compiler probe"))
    rows.append(("compile, cached (fresh process, disk load)", disk_load, ""))
    rows.append(("compile, cached (same process)", timed(lambda: sim.compile_shader(source)), ""))

    n = 1 << 20
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    rows.append(("vector add 1M fp32", timed(lambda: lib.vector_add(a, b, out, threads=n,
                                                                     group_size=256)),
                 f"CPU {LAST_CPU:.3f} s"))
    assert np.array_equal(out, a + b)

    size = 256
    A = rng.standard_normal((size, size), dtype=np.float32)
    B = rng.standard_normal((size, size), dtype=np.float32)
    C = np.zeros((size, size), np.float32)
    mm = sim.compile_shader(MATMUL)
    tiles = size // 8
    def run_matmul() -> None:
        mm.matmul(A, B, C, size, threads=(32 * tiles, tiles), group_size=(32, 1),
                  arg_casts={3: "int32"})

    rows.append((f"simdgroup matmul {size}^3 fp32", timed(run_matmul, 1), ""))
    err = np.max(np.abs(C - A.astype(np.float64) @ B))
    rows[-1] = (*rows[-1][:2], f"CPU {LAST_CPU:.3f} s; max |err| {err:.1e}")

    x = rng.standard_normal((128, 781), dtype=np.float32)
    y = np.zeros_like(x)
    sm = sim.compile_shader(SOFTMAX)
    def run_softmax() -> None:
        sm.softmax(x, y, 781, threads=(256 * 128,), group_size=(256,), arg_casts={2: "int32"})

    rows.append(("softmax 128x781 fp32", timed(run_softmax, 1), ""))
    ref = np.exp(x - x.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    rows[-1] = (*rows[-1][:2], f"CPU {LAST_CPU:.3f} s; max |err| {np.max(np.abs(y - ref)):.1e}")

    width = max(len(r[0]) for r in rows)
    print(f"{'what':<{width}}  {'target s':>8}  {'measured s':>10}  {'ok':>3}  notes")
    for what, seconds, note in rows:
        target = TARGETS.get(what)
        shown = f"{target:8.3f}" if target is not None else f"{'-':>8}"
        ok = "-" if target is None else ("yes" if seconds <= target else "NO")
        print(f"{what:<{width}}  {shown}  {seconds:10.4f}  {ok:>3}  {note}")


if __name__ == "__main__":
    main()
