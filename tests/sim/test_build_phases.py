"""Each kernel library's build records where its time went (msltrans/sim/phases.py) in its
cache metadata, and benchmarks/sim_build_phases.py summarises a cache directory."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from msltrans.sim.phases import PHASES, split_report

ROOT = Path(__file__).resolve().parents[2]

SOURCE = """
#include <metal_stdlib>
using namespace metal;
kernel void sum_lanes(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = simd_sum(x[i]);   // SALT
}
"""

# The shape of clang 19's -ftime-report (two pass reports: the optimiser's, then the code
# generator's), with numbers written for this test.
REPORT = """===-------------------------------------------------------------------------===
                          Pass execution timing report
===-------------------------------------------------------------------------===
  Total Execution Time: 1.5000 seconds (2.0000 wall clock)

   ---User Time---   --System Time--   --User+System--   ---Wall Time---  --- Name ---
   0.9000 ( 60.0%)   0.0100 ( 26.0%)   0.9100 ( 59.9%)   1.2000 ( 60.0%)  SLPVectorizerPass
   0.0500 (3.9%)   0.0000 (9.1%)   0.0500 (4.0%)   0.2500 (12.5%)  (anonymous namespace)::LanesPass
===-------------------------------------------------------------------------===
                        Analysis execution timing report
===-------------------------------------------------------------------------===
  Total Execution Time: 0.0118 seconds (0.0238 wall clock)
===-------------------------------------------------------------------------===
                          Pass execution timing report
===-------------------------------------------------------------------------===
  Total Execution Time: 3.6000 seconds (3.0000 wall clock)

   ---User Time---   --System Time--   --User+System--   ---Wall Time---  --- Name ---
   1.5000 ( 43.8%)   0.0009 (  0.7%)   1.5100 ( 42.1%)   1.9000 ( 43.4%)  CodeGen Prepare
"""


def test_split_report_reads_both_pass_reports():
    phases = split_report(REPORT, 6.0)
    assert phases == {"lanes": 0.25, "opt": 1.75, "codegen": 3.0, "link": 1.0}
    # No report (a compiler that prints none): the whole step is `link`.
    assert split_report("", 2.5) == {"lanes": 0.0, "opt": 0.0, "codegen": 0.0, "link": 2.5}


def test_cold_build_records_its_phases(sim):
    lib = sim.compile_shader(SOURCE.replace("SALT", uuid.uuid4().hex))
    meta = json.loads(lib.path.with_suffix(".json").read_text())
    phases = meta["phases"]
    assert set(phases) == set(PHASES)
    assert all(v >= 0 for v in phases.values())
    # The optimiser and the code generator each took some time, read from clang's report.
    assert phases["opt"] > 0 and phases["codegen"] > 0
    parts = sum(v for k, v in phases.items() if k != "total")
    assert abs(phases["total"] - parts) < 1e-3


def test_summary_script_reports_distribution_and_slowest(tmp_path, capsys):
    from benchmarks import sim_build_phases as script
    totals = [0.5, 1.0, 2.0, 4.0, 30.0]
    for n, total in enumerate(totals):
        phases = dict.fromkeys(PHASES, 0.0) | {"opt": total, "total": total}
        meta = {"name": f"k{n}.metal", "kernels": [{"name": f"kernel_{n}"}], "deps": {},
                "phases": phases}
        (tmp_path / f"{n:064x}.json").write_text(json.dumps(meta))
    (tmp_path / "old.json").write_text(json.dumps({"kernels": [], "deps": {}}))
    (tmp_path / "compilers.json").write_text("{}")
    out = tmp_path / "summary.json"
    assert script.main([str(tmp_path), "--slowest", "2", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert (report["builds"], report["unmeasured"]) == (5, 1)
    assert (report["median"], report["p90"], report["max"]) == (2.0, 30.0, 30.0)
    assert [b["kernels"] for b in report["slowest"]] == ["kernel_4", "kernel_3"]
    assert "kernel_4" in capsys.readouterr().out
