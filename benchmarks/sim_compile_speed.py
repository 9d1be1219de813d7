"""Compile and start-up times of the simulator path (the second half of sim_speed.py).

- a small MSL kernel: cold compile (fresh source), cached load in a fresh process;
- the bitonic top-k of msltrans/workloads/topk_kernel.py at 512 and 1024 wide, cold (fresh
  Triton and simulator caches, in a subprocess): Triton's front end to TTGIR, msltrans's
  TTGIR -> MSL, and clang (the three-step compile of msltrans/sim/large.py, and the
  one-step -O2 compile it replaces, for comparison);
- a fresh process's first small-kernel result from warm caches, split into `import torch,
  triton`, Triton's own cache key (it hashes libtriton once per process, for any backend)
  and the first launch (msltrans's share: its imports, loading the cached MSL and library,
  binding and dispatching; plus Triton's JIT cache lookup).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

VECTOR_ADD = """
#include <metal_stdlib>
using namespace metal;
kernel void vector_add(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                       device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = a[i] + b[i];  // SALT
}
"""

TOPK = """
import json, os, sys, time, warnings
warnings.filterwarnings("ignore")
n, one_step = int(sys.argv[1]), sys.argv[2] == "1"
import msltrans.sim as sim
import msltrans.sim.large as large
from msltrans import toolchain
from msltrans.workloads.topk_kernel import topk_kernel
if one_step:
    large.LARGE_KERNEL_LOOPS = 10**9
sig = {"x_ptr": "*fp32", "values_ptr": "*fp32", "indices_ptr": "*i32"}
out = toolchain.compile_kernel(topk_kernel, sig, {"K": 16, "N": n, "LOG_N": n.bit_length() - 1},
                               num_warps=4, options={"enable_fp_fusion": True}, texts=False)
msl = out.msl
t2 = time.perf_counter()
c0 = os.times()
sim.compile_shader(msl)
c1 = os.times()
t3 = time.perf_counter()
s = out.seconds
print(json.dumps({"triton": s["front end"] + s["ttir"] + s["ttgir"], "msltrans": s["msl"],
                  "clang": t3 - t2, "clang_cpu": c1.children_user + c1.children_system
                  - c0.children_user - c0.children_system, "kb": len(msl) / 1e3,
                  "loops": msl.count("for (")}))
"""

FRESH = """
import time, sys, warnings
warnings.filterwarnings("ignore")
t0 = time.perf_counter()
import torch, triton, triton.language as tl
t1 = time.perf_counter()
from triton.runtime.cache import triton_key
triton_key()
t2 = time.perf_counter()
@triton.jit
def k(x_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)
x = torch.zeros(32)
k[(1,)](x, 32, B=32, num_warps=1)
assert x[0].item() == 1
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""

CACHED_LOAD = """
import sys, time
import msltrans.sim as sim
first, second = sys.stdin.read().split("\\0")
start = time.perf_counter()
sim.compile_shader(first)
mid = time.perf_counter()
sim.compile_shader(second)
print(mid - start, time.perf_counter() - mid)
"""


def _python(code: str, *args: str, env: dict[str, str] | None = None, stdin: str = "") -> str:
    full = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                                     os.environ.get("PYTHONPATH")])))
    full.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    full.update(env or {})
    # A file, not `-c`: @triton.jit reads its kernel's source through inspect.
    with tempfile.NamedTemporaryFile("w", suffix=".py", prefix="msltrans_bench_",
                                     delete=False) as script:
        script.write(code)
    try:
        return subprocess.run([sys.executable, script.name, *args], input=stdin, env=full,
                              capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(script.name)


def small_kernel_rows() -> list[tuple[str, str]]:
    import random

    import msltrans.sim as sim

    cache = tempfile.mkdtemp(prefix="msltrans-bench-")
    os.environ["MSLTRANS_SIM_CACHE_DIR"] = cache
    sim.compile_shader(VECTOR_ADD.replace("SALT", "warm-up"))   # builds the runtime and PCH
    cold = []
    for _ in range(5):
        start = time.perf_counter()
        sim.compile_shader(VECTOR_ADD.replace("SALT", str(random.getrandbits(64))))
        cold.append(time.perf_counter() - start)
    first, second = (VECTOR_ADD.replace("SALT", s) for s in ("cached", "cached, second"))
    sim.compile_shader(first)
    sim.compile_shader(second)
    loads = [tuple(map(float, _python(CACHED_LOAD, env={"MSLTRANS_SIM_CACHE_DIR": cache},
                                      stdin=f"{first}\0{second}").split())) for _ in range(3)]
    return [("small MSL kernel, cold compile", f"{min(cold):.3f} s (median "
             f"{statistics.median(cold):.3f})"),
            ("small MSL kernel, cached, fresh process",
             f"first {min(a for a, _ in loads) * 1e3:.1f} ms (probes the compiler), next "
             f"{min(b for _, b in loads) * 1e3:.1f} ms")]


def topk_rows() -> list[tuple[str, str]]:
    rows = []
    for n in (512, 1024):
        results = {}
        for one_step in ("0", "1"):
            env = {"TRITON_CACHE_DIR": tempfile.mkdtemp(prefix="msltrans-bench-"),
                   "MSLTRANS_SIM_CACHE_DIR": tempfile.mkdtemp(prefix="msltrans-bench-")}
            results[one_step] = json.loads(_python(TOPK, str(n), one_step, env=env))
        r, old = results["0"], results["1"]
        rows.append((f"top-k {n} wide, cold ({r['kb']:.0f} kB MSL, {r['loops']} loops)",
                     f"Triton {r['triton']:.2f} s + msltrans {r['msltrans']:.2f} s + clang "
                     f"{r['clang']:.2f} s (CPU {r['clang_cpu']:.2f} s; one-step -O2: "
                     f"{old['clang']:.2f} s, CPU {old['clang_cpu']:.2f} s)"))
    return rows


def fresh_process_rows(repeat: int = 3) -> list[tuple[str, str]]:
    _python(FRESH)   # warm Triton's and the simulator's caches
    runs = [tuple(map(float, _python(FRESH).split())) for _ in range(repeat)]
    imp, key, launch = (statistics.median(r[i] for r in runs) for i in range(3))
    ok = "yes" if launch <= 0.3 else "NO"
    return [("fresh process, first small-kernel result",
             f"import torch, triton {imp:.2f} s; Triton's cache key (libtriton hash) {key:.2f} s; "
             f"first launch {launch:.3f} s (msltrans's share; target <= 0.3 s: {ok})")]


def compile_table() -> None:
    rows = small_kernel_rows() + topk_rows() + fresh_process_rows()
    width = max(len(what) for what, _ in rows)
    print(f"\ncompile and start-up (median of 3 unless stated; load average "
          f"{os.getloadavg()[0]:.1f})")
    for what, text in rows:
        print(f"{what:<{width}}  {text}")


if __name__ == "__main__":
    compile_table()
