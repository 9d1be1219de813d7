"""No upstream test that passed in the recorded baseline may stop passing.

Needs an upstream Triton tree: `MSLTRANS_TRITON_SRC=<triton-src> pytest tests/conformance`.
Without it (CI has none) the test skips. It re-runs a deterministic sample of
`baseline.json`'s passing ids (`MSLTRANS_BASELINE_SAMPLE`, default 12; 0 = all) through the same
plugin as `scripts/run_upstream_tests.py`, in one pytest subprocess (given
`MSLTRANS_BASELINE_TIMEOUT` seconds, default 3600: a whole run on a cold kernel cache takes
longer on two cores), and checks each passed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASELINE = Path(__file__).with_name("baseline.json")
PLUGIN_DIR = ROOT / "scripts" / "conformance"
UNIT_PREFIX = "python/test/unit/"


def _sample(ids: list[str], n: int) -> list[str]:
    ranked = sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    return sorted(ranked if n <= 0 else ranked[:n])


def _cloudpickle_3() -> bool:
    try:
        from cloudpickle.cloudpickle import CloudPickler  # noqa: F401
    except ImportError:
        return False
    return True


# Upstream files that import what the base environment may lack (DEVELOPERS.md: the venv for
# the upstream run adds them); their ids are left out of the sample without it.
NEEDS = {"runtime/test_cache.py": lambda: importlib.util.find_spec("expecttest") is not None,
         "runtime/test_driver.py": _cloudpickle_3}


def _runnable(test_id: str) -> bool:
    check = NEEDS.get(test_id.removeprefix(UNIT_PREFIX).split("::")[0])
    return check is None or check()


def _src() -> Path:
    src = os.environ.get("MSLTRANS_TRITON_SRC")
    if not src:
        pytest.skip("MSLTRANS_TRITON_SRC is not set (no upstream Triton tree; see DEVELOPERS.md)")
    path = Path(src)
    if not (path / "python" / "test" / "unit").is_dir():
        pytest.skip(f"MSLTRANS_TRITON_SRC={src} has no python/test/unit")
    return path


def test_no_baseline_pass_regressed(tmp_path: Path) -> None:
    src = _src()
    passed = json.loads(BASELINE.read_text(encoding="utf-8"))["passed"]
    if not passed:
        pytest.skip("the baseline records no passing test")
    passed = [i for i in passed if _runnable(i)]
    sample = _sample(passed, int(os.environ.get("MSLTRANS_BASELINE_SAMPLE", "12")))
    raw = tmp_path / "rows.jsonl"
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env.update(MSLTRANS_ENGINE="sim", MSLTRANS_FP64="refuse", MSLTRANS_CONFORMANCE_OUT=str(raw),
               PYTHONPATH=os.pathsep.join(filter(None, (str(PLUGIN_DIR),
                                                        env.get("PYTHONPATH")))))
    ids = [i.removeprefix(UNIT_PREFIX) for i in sample]
    cmd = [sys.executable, "-m", "pytest", *ids, "--device", "cpu", "-p", "msltrans_conformance",
           "-p", "no:cacheprovider", "-q", "--tb=line", "--msl-timeout", "120"]
    workers = int(os.environ.get("MSLTRANS_BASELINE_WORKERS", "2"))
    if workers > 0:
        cmd += ["-n", str(workers)]
    proc = subprocess.run(cmd, cwd=src / "python" / "test" / "unit", env=env,
                          capture_output=True, text=True,
                          timeout=float(os.environ.get("MSLTRANS_BASELINE_TIMEOUT", "3600")))
    rows = {}
    if raw.exists():
        for line in raw.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if "id" in row:
                rows[row["id"]] = row
    regressed = {i: rows.get(i, {}).get("outcome", "not run") for i in sample
                 if rows.get(i, {}).get("outcome") not in ("pass", "xpass")}
    assert not regressed, (f"baseline passes regressed: {regressed}\n"
                           f"pytest output tail:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
