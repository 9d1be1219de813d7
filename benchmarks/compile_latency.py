"""Compile latency per kernel (Triton's source → TTGIR beside ours, TTGIR → MSL) and warm
launch overhead.

Method
------
Compile: for each kernel the plugin's own stages run in-process (msltrans.toolchain, which calls
`MetalBackend.add_stages`), REPEAT times on a fresh MLIR context, with Triton's on-disk cache
out of the way (the stages are called directly). "triton" is the front end plus the ttir and
ttgir stages (Python AST → TTIR →
TTGIR: Triton's work); "msltrans" is the msl stage (walk the TTGIR module into dataclasses and
lower it to MSL text: our work). Medians are reported; the target is msltrans ≤ 50% of triton.
Compiling the MSL itself (clang for the simulator, Apple's compiler on a Mac) is excluded: it
happens once per process per kernel, at the first launch.

Warm launch overhead: a trivial kernel is compiled and launched once; then the compiled
kernel's engine function is swapped for a no-op and `kernel[(1,)](...)` is timed LAUNCHES
times (median per call). That is the whole host-side launch path — Triton's JIT front door
(cache lookup, specialisation, hooks) plus msltrans's launcher (argument binding, device
checks, grid mapping) — without the kernel's execution. Subtracting a timed real launch
from a timed engine call instead would bury ~50 µs under the variance of a ~200 µs
simulator dispatch on a shared machine. The launcher alone is timed the same way, and one
real engine call of the trivial kernel is shown for reference (on the simulator that is the
simulator's own dispatch cost; on MPS, command encoding plus execution). Target: ≤ 100 µs.

    python benchmarks/compile_latency.py [--repeat 5] [--launches 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch
import triton
import triton.language as tl

from msltrans import toolchain
from msltrans.workloads.small_kernels import broadcast_add_kernel, softmax, vector_add


@triton.jit
def scaled_sum_loop_kernel(x_ptr, out_ptr, n_iters, alpha, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, n_iters):
        acc += tl.load(x_ptr + i * BLOCK + offs) * alpha
    tl.store(out_ptr + offs, acc)


@triton.jit
def trivial_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


KERNELS: list[tuple[str, Any, dict[str, str], dict[str, Any], int]] = [
    ("vector_add", vector_add, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                                "n": "i32"}, {"BLOCK": 1024}, 4),
    ("broadcast_2d", broadcast_add_kernel, {"x_ptr": "*fp32", "row_ptr": "*fp32",
                                            "out_ptr": "*fp32", "M": "i32", "N": "i32",
                                            "stride_m": "i32"}, {"BLOCK_M": 32, "BLOCK_N": 64}, 4),
    ("loop", scaled_sum_loop_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_iters": "i32",
                                      "alpha": "fp32"}, {"BLOCK": 256}, 2),
    ("softmax", softmax, {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32",
                          "out_stride": "i32", "n_cols": "i32"}, {"BLOCK": 1024}, 4),
]


def time_compile(fn: Any, signature: dict[str, str], constexprs: dict[str, Any], num_warps: int,
                 repeat: int) -> tuple[float, float | None, str]:
    triton_ms, ours_ms, note = [], [], ""
    for _ in range(repeat):
        out = toolchain.compile_kernel(fn, signature, constexprs, num_warps=num_warps,
                                       options={"enable_fp_fusion": True}, partial=True,
                                       texts=False)
        sec = out.seconds
        if "ttgir" in sec:
            triton_ms.append((sec["front end"] + sec["ttir"] + sec["ttgir"]) * 1e3)
        if out.error is not None:
            note = f"refused: {str(out.error).splitlines()[0][:60]}"
            continue
        ours_ms.append(sec["msl"] * 1e3)
    return (statistics.median(triton_ms), statistics.median(ours_ms) if ours_ms else None, note)


def _median_us(call: Any, n: int, sync: Any) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    sync()
    return statistics.median(times) * 1e6


def launch_overhead(launches: int) -> tuple[float, float, float]:
    from triton.runtime.driver import driver

    device = driver.active.get_active_torch_device()
    x = torch.zeros(32, device=device)
    kernel = trivial_kernel[(1,)](x, 0, BLOCK=32, num_warps=1)
    sync = driver.active.engine.synchronize
    launcher, engine_fn = kernel.run, kernel.function

    def nop(*args: Any, **kwargs: Any) -> None:
        return None

    def launch() -> None:
        trivial_kernel[(1,)](x, 0, BLOCK=32, num_warps=1)

    bound = launcher.bind((x, 0, 32))
    threads, group, casts = launcher.threads(1, 1, 1), launcher.group_size, launcher.arg_casts
    kernel.function = nop  # the JIT passes kernel.function to the launcher: dispatch nothing
    try:
        _median_us(launch, 100, sync)  # warm-up
        overhead = _median_us(launch, launches, sync)
        ours = _median_us(lambda: launcher(1, 1, 1, 0, nop, kernel.packed_metadata, None, None,
                                           None, x, 0, 32), launches, sync)
    finally:
        kernel.function = engine_fn
    dispatch = _median_us(lambda: engine_fn(*bound, threads=threads, group_size=group,
                                            arg_casts=casts), max(launches // 10, 20), sync)
    return overhead, ours, dispatch


def driver_engine() -> str:
    from triton.runtime.driver import driver

    return str(getattr(driver.active, "engine_name", "?"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--launches", type=int, default=2000)
    args = parser.parse_args()
    print(f"{'kernel':<14}{'triton src→TTGIR ms':>21}{'msltrans TTGIR→MSL ms':>23}{'ratio':>8}")
    for name, fn, sig, constexprs, num_warps in KERNELS:
        triton_ms, ours_ms, note = time_compile(fn, sig, constexprs, num_warps, args.repeat)
        if ours_ms is None:
            print(f"{name:<14}{triton_ms:>21.1f}{'—':>23}{'':>8}  {note}")
            continue
        ratio = ours_ms / triton_ms
        flag = "" if ratio <= 0.5 else "  (above the 50% target)"
        print(f"{name:<14}{triton_ms:>21.1f}{ours_ms:>23.1f}{ratio:>7.0%}{flag}")
    overhead, ours, dispatch = launch_overhead(args.launches)
    print(f"\nwarm launch overhead, kernel[grid](...) with dispatch stubbed out: "
          f"{overhead:.1f} µs (target ≤ 100 µs)")
    print(f"  of which msltrans's launcher (binding, grid mapping): {ours:.1f} µs")
    print(f"  for reference, one engine call of the trivial kernel ({driver_engine()}): "
          f"{dispatch:.1f} µs")


if __name__ == "__main__":
    main()
