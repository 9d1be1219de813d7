"""Cold simulator builds of recorded kernels, one fresh cache each, side by side.

Record the MSL of the kernels to time (MSLTRANS_RECORD_MSL=<dir> while running their tests:
msltrans/lower/program.py writes `<kernel>-<hash>.metal` there), then

    python3 benchmarks/sim_build_cold.py <dir>/scan_order_2d-*.metal ...

builds each file in a fresh MSLTRANS_SIM_CACHE_DIR and prints the wall-clock seconds of
its build, the CPU seconds of the compiler processes it ran (what a loaded machine does not
inflate as much) and its phases (msltrans/sim/phases.py). What every cache builds once (the
lanes pass, the runtime library, the shim's PCH) is built before the clock starts. Run it
with PYTHONPATH set to another checkout to time that checkout's build of the same MSL.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

WARM = """#include <metal_stdlib>
using namespace metal;
kernel void warm(device float* p [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    p[i] = simd_sum(p[i]);
}
"""


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _seed() -> Path:
    """A cache holding what every cache builds once (built now)."""
    from msltrans.sim import library

    seed = Path(tempfile.mkdtemp(prefix="msltrans-cold-seed-"))
    os.environ["MSLTRANS_SIM_CACHE_DIR"] = str(seed)
    library.compile_shader(WARM, "warm.metal")
    for meta in seed.glob("*.json"):
        if meta.name != "compilers.json":
            meta.unlink()
            meta.with_suffix(".so").unlink(missing_ok=True)
    return seed


def build_cold(path: Path, seed: Path) -> dict:
    """Build `path` in a fresh cache (a copy of `seed`); its seconds and phases."""
    from msltrans.sim import library

    cache = Path(tempfile.mkdtemp(prefix="msltrans-cold-"))
    try:
        shutil.copytree(seed, cache, dirs_exist_ok=True)
        os.environ["MSLTRANS_SIM_CACHE_DIR"] = str(cache)
        library._loaded.clear()
        cpu, start = _children_cpu(), time.perf_counter()
        library.compile_shader(path.read_text(), path.name)
        wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
        metas = [p for p in cache.glob("*.json") if p.name != "compilers.json"]
        phases = json.loads(metas[0].read_text()).get("phases", {}) if metas else {}
        return {"kernel": path.name, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                "phases": phases}
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("metal", nargs="+", type=Path)
    parser.add_argument("--json", action="store_true", help="one JSON object a line")
    args = parser.parse_args()
    seed = _seed()
    try:
        rows = (build_cold(path, seed) for path in args.metal)
        for row in rows:
            _show(row, args.json)
    finally:
        shutil.rmtree(seed, ignore_errors=True)


def _show(row: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(row), flush=True)
        return
    phases = row["phases"]
    where = ", ".join(f"{k} {phases[k]:.1f}" for k in ("opt", "codegen", "lanes") if k in phases)
    print(f"{row['wall_s']:7.1f} s wall {row['cpu_s']:7.1f} s CPU  {where}  {row['kernel']}",
          flush=True)


if __name__ == "__main__":
    main()
