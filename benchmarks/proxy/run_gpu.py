"""The GPU proxy, on the lent H200: msltrans's MSL (mapped to CUDA), Triton's CUDA backend and
hand-written MSL timed side by side in one run, after their outputs are checked.

    python -m benchmarks.proxy.run_gpu build/proxy [--out $OUT] [--quick] [--passes N]
        [--stat median|iqm]

Inputs come from build_proxy.py (run here first). For every case:
1. check: the simulator's inputs at the check size go through every CUDA build of the MSL;
   outputs must equal the simulator's bit for bit (`exact` cases) or within a few ULP
   (transcendental functions differ between CUDA's and the host's libm); the MMA stand-in
   variants compute something else and are only timed;
2. time: fresh inputs at the time size, outputs poisoned with NaN, one run checked against
   float64 (torch), then `triton.testing.do_bench` (median, L2 flushed between runs).
The table prints rates and the ratios the issue's goals are stated in; `proxy.json` (under
--out) keeps every number. Needs torch, triton, cupy, numpy (all on the lent machine).
"""

from __future__ import annotations

import argparse
import ctypes
import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.proxy import kernels
from benchmarks.proxy.cases import CASES, Case, Size, make_inputs

SEED = 99
_SCALAR = {"i32": np.int32, "i64": np.int64, "fp32": np.float32}


def _ptr(tensor: Any) -> bytes:
    return np.uint64(tensor.data_ptr()).tobytes()


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| over max |b|: how far two engines' outputs are, on the outputs' scale."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    scale = max(float(np.abs(b64).max()), 1e-30) if b.size else 1.0
    return float(np.abs(a64 - b64).max()) / scale if b.size else 0.0


def _ulps(a: np.ndarray, b: np.ndarray) -> int:
    a32 = a.astype(np.float32).view(np.int32).astype(np.int64)
    b32 = b.astype(np.float32).view(np.int32).astype(np.int64)
    a32 = np.where(a32 < 0, -(a32 & 0x7FFFFFFF), a32)
    b32 = np.where(b32 < 0, -(b32 & 0x7FFFFFFF), b32)
    return int(np.abs(a32 - b32).max()) if a.size else 0


def _scalar_bytes(ty: str, value: Any) -> bytes:
    return _SCALAR[ty](value).tobytes()


class Runner:
    """Loads the cubins and launches them through the driver API (`cuLaunchKernel` with one
    pointer per parameter), so a parameter can be any byte blob: device pointers, scalars,
    and msltrans's scalar-argument struct passed by value as Metal's `setBytes` would."""

    def __init__(self, build: Path) -> None:
        import cupy as cp
        import torch

        self.cp, self.torch, self.build = cp, torch, build
        torch.cuda.init()
        cp.cuda.Device(torch.cuda.current_device()).use()
        cp.cuda.runtime.free(0)  # the primary context is current for the driver calls below
        self.functions: dict[tuple[str, str], int] = {}

    def tensors(self, data: dict[str, np.ndarray]) -> dict[str, Any]:
        return {k: self.torch.from_numpy(v).cuda() for k, v in data.items()}

    def function(self, cubin: str, kernel: str) -> int:
        from cupy.cuda import driver

        key = (cubin, kernel)
        if key not in self.functions:
            module = driver.moduleLoad(str(self.build / cubin))
            self.functions[key] = driver.moduleGetFunction(module, kernel)
        return self.functions[key]

    def cuda_launcher(self, variant: dict[str, Any], case: Case, which: str,
                      t: dict[str, Any]) -> Any:
        """`which`: "check" or "time" (the size, and the argument struct packed for it)."""
        from cupy.cuda import driver

        size: Size = getattr(case, which)
        fn = self.function(variant["cubin"], variant["kernel"])
        blobs: list[bytes] = []
        if "buffers" in variant:  # msltrans: pointers by Triton name, then the packed struct
            blobs += [_ptr(t[size.launch.args[n]]) for n in variant["buffers"]]
            if "args_struct" in variant:
                blobs.append(bytes.fromhex(variant["args_struct"][which]))
            grid, block = size.launch.grid, variant["threads"]
        else:
            assert size.hand is not None
            blobs += [_ptr(t[a]) if isinstance(a, str) else _scalar_bytes(*a)
                      for a in size.hand.args]
            grid, block = size.hand.grid, size.hand.threads
        holders = [ctypes.create_string_buffer(b, len(b)) for b in blobs]
        params = (ctypes.c_void_p * len(holders))(*(ctypes.addressof(h) for h in holders))

        def run() -> None:
            _ = holders  # the parameter bytes live as long as the launcher
            driver.launchKernel(fn, grid[0], grid[1], grid[2], block, 1, 1, 0,
                                self.torch.cuda.current_stream().cuda_stream,
                                ctypes.addressof(params), 0)
        return run

    def triton_launcher(self, case: Case, size: Size, t: dict[str, Any]) -> Any:
        fn = getattr(kernels, case.kernel)
        launch = size.triton_launch or size.launch
        args = [t[v] if isinstance(v, str) else v for v in launch.args.values()]

        def run() -> None:
            fn[launch.grid](*args, **launch.constexprs, num_warps=launch.num_warps)
        return run


def _close(out: Any, ref: Any, rtol: float) -> bool:
    """Within `rtol` (relative norm) of the float64 reference where it is a number; where
    the reference is NaN the output must still hold its NaN poison (never written)."""
    import torch

    o = out.double()
    keep = torch.isfinite(ref)
    if not torch.isfinite(o[keep]).all() or not torch.isnan(o[~keep]).all():
        return False
    err = (o[keep] - ref[keep]).norm() / max(ref[keep].norm().item(), 1e-30)
    return bool(err <= rtol)


def _timing_only(variant: str) -> bool:
    """The MMA stand-in and diagnostics.py's `diag:` variants compute something else."""
    return "stand-in" in variant or "diag:" in variant


def check_case(r: Runner, case: Case, entry: dict[str, Any]) -> dict[str, str]:
    data = np.load(r.build / entry["check"])
    inputs = {k[3:]: data[k] for k in data.files if k.startswith("in_")}
    verdict = {}
    for name, v in entry["variants"].items():
        if _timing_only(name):
            verdict[name] = "timing only"
            continue
        prefix = "msl_" if "params" in v else "hand_"
        t = r.tensors({k: x.copy() for k, x in inputs.items()})
        r.cuda_launcher(v, case, "check", t)()
        r.torch.cuda.synchronize()
        worst, rel = 0, 0.0
        same = True
        for o in case.check.outputs:
            got, want = t[o].cpu().numpy(), data[prefix + o]
            same = same and got.tobytes() == want.tobytes()
            worst = max(worst, _ulps(got, want))
            rel = max(rel, _rel(got, want))
        exact = case.exact and (prefix == "msl_" or case.check.hand is None
                                or case.check.hand.exact)
        if exact and not same:
            verdict[name] = f"DIFFERS from the simulator (max {worst} ulp)"
        elif same:
            verdict[name] = "bit-identical to the simulator"
        else:
            verdict[name] = (f"max {worst} ulp, {rel:.1e} of the output scale from the "
                             "simulator")
    return verdict


def _interquartile_mean(times: list[float]) -> float:
    ordered = sorted(times)
    quarter = len(ordered) // 4
    middle = ordered[quarter:len(ordered) - quarter] or ordered
    return sum(middle) / len(middle)


def time_case(r: Runner, case: Case, entry: dict[str, Any], quick: bool,
              passes: int = 1, stat: str = "median") -> dict[str, Any]:
    """Each variant's time: `stat` ("median", or "iqm": the mean of the middle half) of
    do_bench's runs. CUDA events time a ~20 us kernel in steps of ~0.6 us, so its median
    jumps between two steps (3 %) from one call to the next; the middle half's mean falls
    between them. With `passes` > 1 the variants are timed in turn that many times and each
    keeps the median of its passes (the GPU's clock drifts between passes)."""
    import statistics

    import triton

    size = case.time
    data = make_inputs(size, SEED)
    t = r.tensors(data)
    ref = case.reference({k: t[k] for k in size.inputs if k not in size.outputs})
    runs = {"Triton CUDA": r.triton_launcher(case, size, t)}
    for name, v in entry["variants"].items():
        runs[name] = r.cuda_launcher(v, case, "time", t)
    ok: dict[str, bool] = {}
    for name, run in runs.items():
        for o in size.outputs:
            t[o].fill_(float("nan"))
        run()
        r.torch.cuda.synchronize()
        ok[name] = _timing_only(name) or all(_close(t[o], ref[o], case.rtol)
                                             for o in size.outputs)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(passes):
        for name, run in runs.items():
            runs_ms = triton.testing.do_bench(run, warmup=10 if quick else 50,
                                              rep=40 if quick else 200, return_mode="all")
            times[name].append(statistics.median(runs_ms) if stat == "median"
                               else _interquartile_mean(runs_ms))
    scale = 1e9 if case.metric == "GB/s" else 1e12
    rows = {}
    for name, each in times.items():
        ms = statistics.median(each)
        rows[name] = {"ms": ms, "rate": size.work / (ms * 1e-3) / scale, "ok": ok[name]}
        if passes > 1:
            rows[name]["ms_passes"] = each
    return rows


def _set_triton_allocator(torch: Any) -> None:
    """`tl.make_tensor_descriptor` (the tutorial-06-shaped attention kernel builds its
    descriptors on the device) needs global scratch memory for the descriptors: Triton asks
    for it through the allocator set here (its tutorial 06 does the same)."""
    import triton

    def alloc(size: int, alignment: int, stream: int | None) -> Any:
        return torch.empty(size, dtype=torch.int8, device="cuda")

    triton.set_allocator(alloc)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("build", type=Path)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--passes", type=int, default=1,
                    help="time the variants in turn this many times, each keeping its median")
    ap.add_argument("--stat", choices=("median", "iqm"), default="median",
                    help="a variant's time from do_bench's runs: their median, or the mean "
                         "of their middle half (finer than the event timer's step)")
    a = ap.parse_args()
    manifest = json.loads((a.build / "manifest.json").read_text())
    r = Runner(a.build)
    _set_triton_allocator(r.torch)
    results = []
    for entry in manifest:
        case = CASES[entry["index"]]
        if "failed" in entry:  # build_proxy could not build or check it here
            print(f"\n## {case.name}: not built ({entry['failed'][:300]})")
            results.append({"case": case.name, "metric": case.metric, "goal": case.goal,
                            "check": {}, "rows": {}, "failed": entry["failed"]})
            continue
        try:
            verdict = check_case(r, case, entry)
            rows = time_case(r, case, entry, a.quick, a.passes, a.stat)
        except Exception:  # noqa: BLE001 - one broken case must not lose the others
            import traceback

            print(f"\n## {case.name}: FAILED\n{traceback.format_exc()}")
            continue
        results.append({"case": case.name, "metric": case.metric, "goal": case.goal,
                        "check": verdict, "rows": rows, "dot_paths": entry.get("dot_paths", [])})
        print(f"\n## {case.name} ({case.metric}; goal {case.goal})")
        if entry.get("dot_paths"):
            print(f"  msltrans tt.dot paths: {', '.join(entry['dot_paths'])}")
        for name, row in rows.items():
            print(f"  {name:28s} {row['rate']:9.1f} {case.metric:8s} {row['ms']:8.3f} ms "
                  f"{'ok' if row['ok'] else 'WRONG'}  {verdict.get(name, '')}")
    print("\n| kernel | msltrans | Triton CUDA | hand MSL | msltrans / Triton | msltrans / hand |"
          " structure (stand-in) msltrans / hand |")
    print("|---|---|---|---|---|---|---|")
    for res in results:
        rows = res["rows"]
        m, tr, h = (rows.get(k, {}).get("rate") for k in ("msltrans", "Triton CUDA", "hand MSL"))
        ms_, hs = (rows.get(k, {}).get("ms") for k in ("msltrans (MMA stand-in)",
                                                       "hand MSL (MMA stand-in)"))

        def f(x: float | None) -> str:
            return f"{x:.1f}" if x else "-"

        def ratio(a_: float | None, b_: float | None) -> str:
            return f"{a_ / b_:.2f}" if a_ and b_ else "-"
        struct = f"{hs / ms_:.2f}" if ms_ and hs else "-"
        if hs and not ms_ and res.get("dot_paths"):  # msltrans's dots use no simdgroup MMA
            struct = "n/a (dot path " + "/".join(sorted(set(res.get("dot_paths", [])))) + ")"
        if "failed" in res:
            print(f"| {res['case']} | not built: {res['failed'][:80]} | | | | | |")
            continue
        print(f"| {res['case']} | {f(m)} | {f(tr)} | {f(h)} | {ratio(m, tr)} | {ratio(m, h)} |"
              f" {struct} |")
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "proxy.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
