"""Where the simulator's kernel builds spend their time, over a cache directory.

Every kernel library the simulator builds records its phases in its cache metadata
(`<key>.json`, "phases": msltrans/sim/phases.py). Run the tests (or anything) on a fresh
cache, then summarise:

    MSLTRANS_SIM_CACHE_DIR=/tmp/simcache python3 -m pytest -n 2 -q tests/e2e
    python3 benchmarks/sim_build_phases.py /tmp/simcache

prints the distribution of build times (median, p90, max) and the slowest kernels with
their phases (and their pipeline where it is not the one-step compile: `[split]`,
`[three-step]`; `[loops kept]` where the long element loops of a very large function stayed
loops, msltrans/sim/unroll.py); --json writes the same as JSON; `--since EPOCH` keeps only
the builds written from that time on (CI prints the summary of what its test run built cold
that way).
Libraries built before phases were recorded are counted as unmeasured.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

from msltrans.sim.phases import PHASES


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank: a value of the list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def collect(cache: Path, since: float = 0.0) -> tuple[list[dict], int]:
    """(builds with phases, count without), one per kernel library's metadata written at or
    after `since` (seconds since the epoch)."""
    found, unmeasured = [], 0
    for meta in sorted(cache.glob("*.json")):
        try:
            if meta.stat().st_mtime < since:
                continue
            data = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or "kernels" not in data:
            continue   # not a kernel library's metadata
        phases = data.get("phases")
        if not isinstance(phases, dict) or "total" not in phases:
            unmeasured += 1
            continue
        kernels = ",".join(k.get("name", "?") for k in data["kernels"])
        found.append({"key": meta.stem[:16], "kernels": kernels, "phases": phases,
                      "pipeline": data.get("pipeline", ""),
                      "element_loops": data.get("element_loops", "")})
    return found, unmeasured


def summary(builds: list[dict], unmeasured: int, slowest: int) -> dict:
    totals = [b["phases"]["total"] for b in builds]
    out: dict = {"builds": len(builds), "unmeasured": unmeasured}
    if totals:
        out.update(median=percentile(totals, 0.5), p90=percentile(totals, 0.9),
                   max=max(totals), sum=sum(totals))
        out["phase_sums"] = {p: sum(b["phases"].get(p, 0.0) for b in builds) for p in PHASES}
    out["slowest"] = sorted(builds, key=lambda b: -b["phases"]["total"])[:slowest]
    return out


def render(report: dict) -> str:
    lines = [f"{report['builds']} kernel builds with phases "
             f"({report['unmeasured']} without)"]
    if report["builds"]:
        lines.append(f"total seconds: median {report['median']:.2f}, p90 {report['p90']:.2f}, "
                     f"max {report['max']:.2f}, sum {report['sum']:.1f}")
        sums = report["phase_sums"]
        lines.append("all builds by phase: " + ", ".join(
            f"{p} {sums[p]:.1f}" for p in PHASES if p != "total"))
    head = f"{'total':>7} " + " ".join(f"{p[:8]:>8}" for p in PHASES[:-1]) + "  kernels"
    lines += ["", f"slowest {len(report['slowest'])}:", head]
    for b in report["slowest"]:
        ph = b["phases"]
        cells = " ".join(f"{ph.get(p, 0.0):8.2f}" for p in PHASES[:-1])
        notes = [b.get("pipeline", "") if b.get("pipeline") != "one-step" else "",
                 "loops kept" if b.get("element_loops") == "kept" else ""]
        steps = ", ".join(n for n in notes if n)
        steps = f" [{steps}]" if steps else ""
        lines.append(f"{ph['total']:7.2f} {cells}  {b['kernels'][:60]} ({b['key']}){steps}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get("MSLTRANS_SIM_CACHE_DIR",
                             str(Path.home() / ".cache" / "msltrans" / "sim"))
    parser.add_argument("cache", nargs="?", default=default, help="simulator cache directory")
    parser.add_argument("--slowest", type=int, default=20)
    parser.add_argument("--json", metavar="PATH", help="also write the summary as JSON")
    parser.add_argument("--since", type=float, default=0.0, metavar="EPOCH",
                        help="only builds written at or after this time (seconds since the "
                             "epoch): what one run built cold")
    args = parser.parse_args(argv)
    builds, unmeasured = collect(Path(args.cache), args.since)
    report = summary(builds, unmeasured, args.slowest)
    print(render(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
