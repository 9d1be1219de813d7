"""Where a kernel library's build spends its time, kept in its cache metadata ("phases").

build.py times each step (preprocessing, clang's front end, the NaN rewrite) and runs the
optimise-and-generate step with clang's -ftime-report, whose two "Pass execution timing
report" sections are the optimiser's passes (the lanes pass among them) and the code
generator's. Seconds of wall-clock time; `link` is the rest of that step (clang's start,
reading the IR) and the linker run after it. benchmarks/sim_build_phases.py summarises them
over a cache directory.
"""

from __future__ import annotations

import re

TIME_REPORT = ("-ftime-report",)
# The order phases are reported in.
PHASES = ("preprocess", "front_end", "nan_rewrite", "lanes", "opt", "codegen", "link",
          "total")
_REPORT = re.compile(r"^\s*Pass execution timing report\s*$", re.M)
_TOTAL = re.compile(r"Total Execution Time: [\d.]+ seconds \(([\d.]+) wall clock\)")
_LANES = re.compile(r"^\s*(?:[\d.]+ \(\s*[\d.]+%\)\s+){3}([\d.]+) \(\s*[\d.]+%\)\s+"
                    r"\(anonymous namespace\)::LanesPass\s*$", re.M)


def split_report(stderr: str, step_seconds: float) -> dict[str, float]:
    """lanes / opt / codegen / link seconds of one -ftime-report compile that took
    `step_seconds` (all of it `link` where the report is missing)."""
    sections = _REPORT.split(stderr)[1:]
    totals = []
    for section in sections[:2]:
        found = _TOTAL.search(section)
        totals.append(float(found.group(1)) if found else 0.0)
    totals += [0.0] * (2 - len(totals))
    lanes = _LANES.search(sections[0]) if sections else None
    lanes_s = float(lanes.group(1)) if lanes else 0.0
    opt, codegen = max(totals[0] - lanes_s, 0.0), totals[1]
    return {"lanes": lanes_s, "opt": opt, "codegen": codegen,
            "link": max(step_seconds - lanes_s - opt - codegen, 0.0)}

