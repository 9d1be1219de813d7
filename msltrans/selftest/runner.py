"""`msltrans selftest`: run the curated cases on this machine's engine and write a receipt.

On a Mac (MPS) every output is compared with the bytes the CPU simulator produced for the
same inputs (`reference.npz`, shipped with msltrans and kept current by CI): equal bytes where
the emitted MSL allows an exactness claim, else the distance is recorded against the bound
the MSL specification's accuracy tables give (msltrans/selftest/accuracy.py). Every output is
also checked against an independent float64/numpy reference. On Linux the same command runs
on the simulator (CI runs it). Tutorial kernels are timed against torch's own MPS ops.

Robustness: the cases run in a worker process (msltrans/selftest/worker.py) that reports each
case as it starts and ends. A case that kills the process (a compile crash, a GPU watchdog
abort, a segfault) or runs past its timeout is recorded as "crash" / "timeout" under its
name, and a fresh worker runs the remaining cases. The receipt is rewritten (temp file +
rename) before the first case and after every case, naming the case in flight, so whatever
stops the run leaves a receipt that says how far it got.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from msltrans import settings
from msltrans.errors import MetalNonRecoverableError
from msltrans.selftest.cases import CASES, Case
from msltrans.selftest.checks import FAST_MATH_ENV, run_case
from msltrans.selftest.context import Context

REFERENCE = Path(__file__).with_name("reference.npz")
SCHEMA = 2
VERDICTS = ("pass", "fail", "refused", "skip", "error", "crash", "timeout")
STARTUP_S = 180.0  # importing torch and triton in a fresh worker, before its first case


def _engine() -> tuple[str, str, Any]:
    """(engine name, torch device, driver) of the active Metal driver."""
    from triton.runtime.driver import driver

    from msltrans.backend.driver import MetalDriver

    active = driver.active
    if not isinstance(active, MetalDriver):
        raise MetalNonRecoverableError(
            f"the active Triton driver is {type(active).__name__}, not msltrans's",
            hint="set TRITON_DEFAULT_BACKEND=metal")
    return active.engine_name, active.engine.device_type, active


def all_cases(extra: str | None = None) -> list[Case]:
    """The shipped cases, plus those of `module:attribute` (a list of Case; for tests)."""
    from msltrans.selftest.cases_probe import PROBES

    cases = CASES + PROBES
    if extra:
        import importlib

        module, _, attr = extra.partition(":")
        cases = cases + list(getattr(importlib.import_module(module), attr))
    return cases


def select(full: bool, only: list[str] | None, extra: str | None = None) -> list[Case]:
    cases = all_cases(extra)
    if only:
        known = {c.name for c in cases}
        unknown = [n for n in only if n not in known]
        if unknown:
            raise MetalNonRecoverableError(f"no self-test case named {', '.join(unknown)}",
                                           hint=f"cases: {', '.join(sorted(known))}")
        by_name = {c.name: c for c in cases}
        return [by_name[n] for n in dict.fromkeys(only)]
    return [c for c in cases if (full or not c.full_only) and not c.group == "harness"]


def chip_name() -> str:
    """The GPU's name for the receipt's file name ("CPU Metal simulator" off a Mac)."""
    try:
        engine = _engine()[0]
        if engine == "mps":
            import torch

            return str(torch._C._mps_get_name())
    except Exception:
        return "unknown"
    return "CPU Metal simulator"


def environment(engine: str) -> dict[str, Any]:
    import torch
    import triton

    import msltrans
    from msltrans import msl_version

    info: dict[str, Any] = {
        "engine": engine, "python": platform.python_version(), "torch": torch.__version__,
        "triton": triton.__version__, "msltrans": msltrans.__version__,
        "os": platform.platform(), "machine": platform.machine(),
        "macos": platform.mac_ver()[0] or None,
        "msl_version": msl_version.text(msl_version.target()),
        "math_mode_env": {FAST_MATH_ENV: settings.raw(FAST_MATH_ENV)},
    }
    if engine == "mps":
        info["chip"] = str(torch._C._mps_get_name())
        info["gpu_cores"] = int(torch._C._mps_get_core_count())
    else:
        info["chip"] = "CPU Metal simulator"
    return info


def _safe_environment(engine: str) -> dict[str, Any]:
    try:
        return environment(engine)
    except Exception as exc:  # the cases still run; the receipt says what failed
        return {"engine": engine, "chip": "unknown", "python": platform.python_version(),
                "machine": platform.machine(), "os": platform.platform(),
                "error": f"{type(exc).__name__}: {exc}"}


class Receipt:
    """The receipt as the run goes: rewritten atomically after every change."""

    def __init__(self, path: Path | None, full: bool) -> None:
        self.path = path
        self.data: dict[str, Any] = {
            "msltrans_selftest": SCHEMA,
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "set": "full" if full else "quick", "complete": False, "running": None,
            "environment": None, "reference": None, "summary": {}, "cases": []}

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        self.save()

    def add(self, row: dict[str, Any]) -> None:
        self.data["cases"].append(row)
        self.data["running"] = None
        self.save()

    def finish(self) -> dict[str, Any]:
        rows = self.data["cases"]
        self.data["summary"] = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
        self.data.update(complete=True, running=None)
        self.save()
        return self.data

    def save(self) -> None:
        if self.path is not None:
            save(self.data, self.path)


def run(full: bool = False, time_kernels: bool | None = None, only: list[str] | None = None,
        progress: Callable[[str], None] | None = None, out: Path | None = None,
        isolate: bool = True, timeout_s: float | None = None, extra: str | None = None
        ) -> dict[str, Any]:
    """Run the cases and return the receipt (also written to `out` as the run goes)."""
    receipt = Receipt(out, full)
    engine, device, driver = _engine()
    receipt.update(environment=_safe_environment(engine))
    reference = load_reference()
    receipt.update(reference="simulator bytes shipped with msltrans" if reference else None)
    time_kernels = engine == "mps" if time_kernels is None else time_kernels
    cases = select(full, only, extra)
    if isolate:
        _run_isolated(cases, full, time_kernels, receipt, progress, timeout_s, extra)
    else:
        sync = driver.get_device_interface().synchronize if time_kernels else None
        for case in cases:
            receipt.update(running=case.name)
            row = run_case(case, device, full, reference, sync, engine)
            receipt.add(row)
            if progress:
                progress(f"{case.name:22s} {row['verdict']}")
    return receipt.finish()


def _run_isolated(cases: list[Case], full: bool, time_kernels: bool, receipt: Receipt,
                  progress: Callable[[str], None] | None, timeout_s: float | None,
                  extra: str | None) -> None:
    pending = list(cases)
    while pending:
        with tempfile.TemporaryDirectory(prefix="msltrans-selftest-") as tmp:
            done = _worker(pending, full, time_kernels, receipt, progress, timeout_s, extra,
                           Path(tmp))
        if not done:  # the worker could not start: every remaining case says why
            return
        pending = pending[done:]


def _worker(cases: list[Case], full: bool, time_kernels: bool, receipt: Receipt,
            progress: Callable[[str], None] | None, timeout_s: float | None,
            extra: str | None, tmp: Path) -> int:
    """Run `cases` in one worker until they end or it dies; returns how many got a row."""
    results = tmp / "results.jsonl"
    results.touch()
    cmd = [sys.executable, "-m", "msltrans.selftest.worker", "--results", str(results)]
    cmd += ["--full"] if full else []
    cmd += ["--time"] if time_kernels else []
    cmd += ["--extra", extra] if extra else []
    cmd += [c.name for c in cases]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    log = open(tmp / "worker.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    by_name = {c.name: c for c in cases}
    count, current, started, offset = 0, None, time.monotonic(), 0
    try:
        while True:
            with open(results, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
            lines = chunk.split(b"\n")
            offset += len(chunk) - len(lines[-1])
            for line in lines[:-1]:
                msg = json.loads(line)
                if "start" in msg:
                    current, started = msg["start"], time.monotonic()
                    receipt.update(running=current)
                else:
                    row = msg["row"]
                    receipt.add(row)
                    count += 1
                    current = None
                    if progress:
                        progress(f"{row['name']:22s} {row['verdict']}")
            if count == len(cases):
                proc.wait(timeout=60)
                return count
            rc = proc.poll()
            limit = (timeout_s or by_name[current].timeout_s) if current else STARTUP_S
            if rc is not None or time.monotonic() - started > limit:
                if rc is None:
                    _kill(proc)
                tail = _tail(tmp / "worker.log")
                if current is None and count:
                    return count  # died between cases: a fresh worker runs the rest
                if current is None:
                    why = f"the self-test worker exited ({_status(proc.returncode)}) " \
                          f"before running a case: {tail}"
                    for case in cases[count:]:
                        receipt.add({"name": case.name, "group": case.group,
                                     "notes": case.notes, "verdict": "error", "reason": why})
                    return 0
                timed_out = rc is None
                case = by_name[current]
                row = {"name": current, "group": case.group, "notes": case.notes,
                       "verdict": "timeout" if timed_out else "crash",
                       "reason": (f"no result after {limit:g} s; the worker was killed"
                                  if timed_out else
                                  f"the worker died ({_status(proc.returncode)})"),
                       "seconds": round(time.monotonic() - started, 3), "log_tail": tail}
                if not timed_out and case.crash_passes:  # the probe's answer, harshly given
                    row.update(verdict="pass", properties={"crashed": row["reason"],
                                                           "meaning": case.crash_passes})
                receipt.add(row)
                if progress:
                    progress(f"{current:22s} {row['verdict']}")
                return count + 1
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            _kill(proc)
        log.close()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _status(rc: int | None) -> str:
    if rc is not None and rc < 0:
        try:
            return f"signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"signal {-rc}"
    return f"exit status {rc}"


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        text = path.read_bytes()[-limit:].decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(line for line in text.splitlines()
                     if "warn_once" not in line and "FP_FUSION" not in line)[-limit:]


def load_reference() -> dict[str, np.ndarray] | None:
    return dict(np.load(REFERENCE)) if REFERENCE.exists() else None


def write_reference(path: Path = REFERENCE) -> dict[str, int]:
    """Run every case on the simulator and store its output bytes (a developer step; CI
    checks the stored bytes are current)."""
    engine, device, _ = _engine()
    if engine != "sim":
        raise MetalNonRecoverableError("the reference bytes come from the simulator",
                                       hint="run with MSLTRANS_ENGINE=sim")
    data: dict[str, np.ndarray] = {}
    for case in all_cases():
        if case.group == "harness" or not case.sim_bytes:
            continue
        try:
            outputs = case.fn(Context(case.name, device, case.full_only, engine))
        except Exception:  # a probe the simulator refuses has no bytes to ship
            continue
        for out in outputs:
            data[f"{case.name}/{out.name}"] = out.bits
    np.savez_compressed(path, **data)
    return {k: int(v.nbytes) for k, v in data.items()}


def save(receipt: dict[str, Any], out: Path) -> None:
    """Write the receipt atomically: a temporary file beside it, then a rename."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(receipt, indent=1, default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

