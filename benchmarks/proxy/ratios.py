"""Issue 36's ratios from one or more run_gpu.py results of the same lease.

    python -m benchmarks.proxy.ratios OUT/proxy.json [OUT2/proxy.json ...] [--label A B]
    python -m benchmarks.proxy.ratios benchmarks/results/proxy-<date>-<what>.json

- ragged rows: msltrans / Triton CUDA and msltrans / hand MSL;
- GEMM: msltrans / hand GEMM;
- attention forward: msltrans TFLOP/s over the same run's GEMM fp16 64x64x32 TFLOP/s (and
  every other variant's: fast::exp2, loads first, the diagnostics, the hand kernel);
- attention backward: TFLOP/s over the forward of the same kernel, head dim and masking.
With several results (labelled), one column per result.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

GEMM_REF = "matmul fp16->fp32 4096^3, 64x64x32"


def _rate(rows: dict[str, Any], name: str) -> float | None:
    r = rows.get(name)
    return r["rate"] if r else None


def _cases(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["case"]: r for r in results if r.get("rows")}


def ratios(results: list[dict[str, Any]]) -> list[tuple[str, str, float | None]]:
    """(case, what, ratio) rows."""
    cases = _cases(results)
    out: list[tuple[str, str, float | None]] = []
    gemm = _rate(cases[GEMM_REF]["rows"], "msltrans") if GEMM_REF in cases else None
    for name, res in cases.items():
        rows = res["rows"]
        m = _rate(rows, "msltrans")
        if m is None:
            continue
        if "ragged" in name:
            for ref in ("Triton CUDA", "hand MSL"):
                h = _rate(rows, ref)
                out.append((name, f"msltrans / {ref}", m / h if h else None))
        elif name.startswith("matmul"):
            h = _rate(rows, "hand MSL")
            out.append((name, "msltrans / hand GEMM", m / h if h else None))
        elif "attention fwd" in name:
            for variant in rows:
                if variant == "Triton CUDA" or "stand-in" in variant:
                    continue
                v = _rate(rows, variant)
                out.append((name, f"{variant} / GEMM fp16", v / gemm if v and gemm else None))
        elif "attention bwd" in name:
            fwd = re.sub(r"bwd (fp16 d\d+(?: causal)?) 32x4096", r"fwd \1 64x4096", name)
            f = _rate(cases[fwd]["rows"], "msltrans") if fwd in cases else None
            out.append((name, "msltrans / same-run forward", m / f if f else None))
            out.append((name, "msltrans / GEMM fp16", m / gemm if gemm else None))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--label", nargs="*")
    a = ap.parse_args()
    labels, tables = [], []
    for p in a.results:  # run_gpu's proxy.json, or a results file holding several runs
        data = json.loads(p.read_text())
        runs = data["runs"] if isinstance(data, dict) else {p.parent.name: data}
        for label, res in runs.items():
            labels.append(label)
            tables.append(ratios(res))
    labels = a.label or labels
    keys: list[tuple[str, str]] = []
    for t in tables:
        keys += [(c, w) for c, w, _ in t if (c, w) not in keys]
    print("| case | ratio | " + " | ".join(labels) + " |")
    print("|---|---|" + "---|" * len(labels))
    for c, w in keys:
        vals = []
        for t in tables:
            v = next((r for cc, ww, r in t if (cc, ww) == (c, w)), None)
            vals.append(f"{v:.2f}" if v else "-")
        print(f"| {c} | {w} | " + " | ".join(vals) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
