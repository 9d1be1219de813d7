"""What the conformance runners (`scripts/run_upstream_tests.py`, `scripts/run_liger_tests.py`)
share: the commit of the suite's checkout, the common fields of the run record (`<raw>.run.json`),
the environment the pytest child runs in, and `main`'s run -> load rows -> run record flow.

The per-suite parts (arguments, test files, the pytest command, the markdown) stay in the scripts.
Imported as `conformance.runner_common` by the runners in scripts/.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shlex
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import portable, summary


def suite_commit(src: Path, mirror_env: str, name: str, placeholder: str) -> str:
    """`<placeholder> (name <hash> <date>)` from `src/.git` or the git dir `$mirror_env`
    names; no path of this machine (portable.py)."""
    commit = portable.tree_commit(src, mirror_env)
    return f"{placeholder} ({name} {commit})" if commit else placeholder


def machine_line(triton_version: str) -> str:
    return (f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
            f"{platform.system()} {platform.release()}; Python {platform.python_version()}"
            f", triton {triton_version}; engine sim (CPU)")


def run_info(script: str, argv: Sequence[str], upstream: str, selection: Sequence[str],
             workers: int, wall: float | None, notes: str) -> dict[str, Any]:
    """The run record: `script` is the runner's path as shown in `command`."""
    import triton

    info: dict[str, Any] = {
        "command": "`" + " ".join(["python", script,
                                   *map(shlex.quote, portable.portable_argv(argv))]) + "`",
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_line(triton.__version__),
        "upstream": upstream, "selection": "; ".join(selection),
        "triton": triton.__version__,
    }
    if wall is not None:
        info["wall_time"] = f"{wall:.0f} s ({workers} xdist workers)"
    if notes:
        info["notes"] = notes
    return info


def environment(raw: Path, plugin_dir: Path, extra_paths: Sequence[str] = ()) -> dict[str, str]:
    """The pytest child's environment: simulator engine, rows to `raw`, `plugin_dir` (then
    `extra_paths`) first on PYTHONPATH."""
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env["MSLTRANS_ENGINE"] = "sim"
    env["MSLTRANS_CONFORMANCE_OUT"] = str(raw)
    paths = (str(plugin_dir), *extra_paths, env.get("PYTHONPATH"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton's 3.9 default, without its warning
    return env


def run_pytest(cmd: list[str], cwd: Path, env: dict[str, str], raw: Path) -> tuple[int, float]:
    """Run `cmd` in `cwd` after clearing `raw`; its return code and wall time in seconds."""
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.unlink(missing_ok=True)
    print("+", shlex.join(cmd), f"(in {cwd})", flush=True)
    t0 = time.monotonic()
    rc = subprocess.run(cmd, cwd=cwd, env=env).returncode
    return rc, time.monotonic() - t0


def load_run(raw: Path, summary_only: bool, notes: str,
             make_info: Callable[[], dict[str, Any]]) -> tuple[summary.Results, dict[str, Any]]:
    """The rows in `raw` and the run record: with `summary_only`, the recorded `<raw>.run.json`
    (what that run was, not this call; `notes` replace its notes); else `make_info()`, written
    there."""
    res = summary.load(raw)
    info_path = raw.with_suffix(".run.json")
    if summary_only and info_path.exists():
        info = json.loads(info_path.read_text(encoding="utf-8"))
        if notes:
            info["notes"] = notes
    else:
        info = make_info()
        info_path.write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return res, info


def exit_status(rc: int) -> int:
    """pytest's 1 (some tests failed) and 5 (none collected) are normal results here; 2+ means
    the run itself broke."""
    return 0 if rc in (0, 1, 5) else rc

