"""pytest plugin for running Triton's own unit tests against msltrans (`-p msltrans_conformance`).

Loaded by `scripts/run_upstream_tests.py`; the upstream test files stay unmodified. It

- shims names that the upstream tree imports from `triton._internal_testing` but the installed
  Triton lacks (version skew between the tree and the pinned release; each shim answers what
  it answers for any non-Intel backend, e.g. `is_xpu_cri() -> False`);
- selects a deterministic sample of the collected cases (`--msl-per-function`,
  `--msl-max-tests`, `--msl-sample-seed`): the same on every xdist worker, as xdist requires;
- turns a `MetalNonRecoverableError` raised by a test into an expected failure ("refused"),
  which is what "correct or refuse" promises; everything else keeps its pytest outcome;
- enforces a per-test time limit (`--msl-timeout`): SIGALRM raises in Python code, and a hard
  faulthandler exit `--msl-timeout + 30` s later ends a worker stuck in native code (xdist then
  reports that test as crashed and starts a new worker);
- records one JSON line per test in `$MSLTRANS_CONFORMANCE_OUT` (controller process only).
"""

from __future__ import annotations

import faulthandler
import hashlib
import json
import os
import re
import signal
import sys
import traceback
from collections import defaultdict
from typing import Any

import pytest

SHIMS: dict[str, Any] = {
    "is_xpu_cri": lambda: False,
}
HARD_EXIT_GRACE_S = 30


def _apply_shims() -> list[str]:
    import triton._internal_testing as it

    added = []
    for name, value in SHIMS.items():
        if not hasattr(it, name):
            setattr(it, name, value)
            added.append(name)
    return added


SHIMMED = _apply_shims()


class TestTimeout(Exception):
    """A test ran past --msl-timeout."""


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("msltrans", "msltrans conformance")
    g.addoption("--msl-per-function", type=int, default=0,
                help="keep at most N cases of each test function (0: all)")
    g.addoption("--msl-max-tests", type=int, default=0, help="keep at most N cases in all")
    g.addoption("--msl-sample-seed", default="0", help="seed of the deterministic sample")
    g.addoption("--msl-timeout", type=float, default=0.0, help="seconds per test (0: none)")


def _rank(nodeid: str, seed: str) -> str:
    return hashlib.sha256(f"{seed}:{nodeid}".encode()).hexdigest()


def _function_key(item: pytest.Item) -> str:
    return f"{item.nodeid.split('::')[0]}::{getattr(item, 'originalname', item.name)}"


@pytest.hookimpl(trylast=True)  # after -k/-m deselection, so caps count selected cases
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    per_fn = config.getoption("--msl-per-function")
    cap = config.getoption("--msl-max-tests")
    seed = config.getoption("--msl-sample-seed")
    if not per_fn and not cap:
        return
    groups: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        groups[_function_key(item)].append(item)
    keep: set[str] = set()
    ranked = {k: sorted(v, key=lambda i: _rank(i.nodeid, seed)) for k, v in groups.items()}
    if per_fn:
        for k in ranked:
            ranked[k] = ranked[k][:per_fn]
    if cap:
        # Round-robin over the functions so a cap still covers every function it can.
        rounds = max((len(v) for v in ranked.values()), default=0)
        order = [v[r] for r in range(rounds) for v in ranked.values() if r < len(v)]
        ranked_ids = [i.nodeid for i in order[:cap]]
    else:
        ranked_ids = [i.nodeid for v in ranked.values() for i in v]
    keep = set(ranked_ids)
    deselected = [i for i in items if i.nodeid not in keep]
    items[:] = [i for i in items if i.nodeid in keep]  # collection order, identical everywhere
    if deselected:
        config.hook.pytest_deselected(items=deselected)


_hang: Any = None


def _hang_file(config: pytest.Config) -> Any:
    """Per-process file that the hard timeout writes to, so a killed worker reads as a timeout."""
    global _hang
    out = os.environ.get("MSLTRANS_CONFORMANCE_OUT")
    if _hang is None and out:
        wid = getattr(config, "workerinput", {}).get("workerid", "main")
        _hang = open(f"{out}.hang.{wid}.{os.getpid()}", "a", encoding="utf-8")  # noqa: SIM115
    return _hang


def hard_timeouts(out: str) -> set[str]:
    """Test ids whose worker the hard timeout ended (read from the per-process hang files)."""
    import glob

    ids: set[str] = set()
    for path in glob.glob(f"{glob.escape(out)}.hang.*"):
        last = None
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("TEST "):
                    last = line[5:].rstrip("\n")
                elif line.startswith("Timeout (") and last:
                    ids.add(last)
    return ids


def _on_alarm(signum: int, frame: Any) -> None:
    raise TestTimeout("test ran past --msl-timeout")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    limit = item.config.getoption("--msl-timeout")
    if not limit:
        return (yield)
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    hang = _hang_file(item.config)
    if hang is not None:
        hang.write(f"TEST {item.nodeid}\n")
        hang.flush()
        faulthandler.dump_traceback_later(limit + HARD_EXIT_GRACE_S, exit=True, file=hang)
    else:
        faulthandler.dump_traceback_later(limit + HARD_EXIT_GRACE_S, exit=True)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, old)


def _refusal(exc: BaseException | None) -> BaseException | None:
    """The MetalNonRecoverableError in `exc`'s cause/context chain, if any."""
    from msltrans.errors import MetalNonRecoverableError

    seen = 0
    while exc is not None and seen < 16:
        if isinstance(exc, MetalNonRecoverableError):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


# Triton's front end refusing what MetalOptions declares absent (fp8 types other than
# fp8e4nv / fp8e5, tf32): the
# same "refuse" as a MetalNonRecoverableError, raised one layer up.
FRONTEND_REFUSALS = re.compile(
    r"not supported in this architecture\. The supported fp8 dtypes are \(|"
    r"input_precision must be one of \('ieee',\)")


def _frontend_refusal(exc: BaseException) -> str | None:
    text = str(exc)
    m = FRONTEND_REFUSALS.search(text)
    if m is None:
        return None
    line = next((ln for ln in text.splitlines() if m.group(0) in ln), m.group(0))
    return line.strip()[:300]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    report = yield
    if call.excinfo is None or report.outcome != "failed" or hasattr(report, "wasxfail"):
        return report
    err = _refusal(call.excinfo.value)
    if err is not None:
        report.outcome = "skipped"
        report.wasxfail = f"refused: {type(err).__name__}: {err}"
        report.msl_refusal = {"op": getattr(err, "op", None), "reason": getattr(err, "reason", "")}
        return report
    front = _frontend_refusal(call.excinfo.value)
    if front is not None:
        report.outcome = "skipped"
        report.wasxfail = f"refused: front end (MetalOptions): {front}"
        report.msl_refusal = {"op": None, "reason": front}
    return report


def _is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


def _skip_reason(report: pytest.TestReport) -> str:
    lr = report.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        return str(lr[2]).removeprefix("Skipped: ")
    return str(lr)[-500:]


def _failure_text(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return f"{crash.message}"[:2000]
    return str(report.longrepr)[-2000:]


class Recorder:
    def __init__(self, path: str) -> None:
        self.path = path
        self.fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed at session end
        self.done: set[str] = set()

    def write(self, row: dict[str, Any]) -> None:
        self.fh.write(json.dumps(row) + "\n")
        self.fh.flush()

    def close(self) -> None:
        self.fh.close()


_recorder: Recorder | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _recorder
    out = os.environ.get("MSLTRANS_CONFORMANCE_OUT")
    if out and _is_controller(config):
        _recorder = Recorder(out)
        _recorder.write({"meta": {"shims": SHIMMED, "argv": sys.argv[1:]}})


def pytest_unconfigure(config: pytest.Config) -> None:
    global _recorder
    if _recorder is not None and _is_controller(config):
        _recorder.close()
        _recorder = None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    rec = _recorder
    if rec is None or report.nodeid in rec.done:
        return
    row: dict[str, Any] = {"id": report.nodeid, "when": report.when,
                           "duration": round(report.duration, 3)}
    if hasattr(report, "wasxfail"):
        if report.skipped:
            row.update(outcome="xfail", reason=report.wasxfail)
            if hasattr(report, "msl_refusal"):
                row["refusal"] = report.msl_refusal
        else:
            row.update(outcome="xpass", reason=report.wasxfail)
    elif report.skipped:
        row.update(outcome="skip", reason=_skip_reason(report))
    elif report.failed:
        row.update(outcome="error" if report.when != "call" else "fail",
                   reason=_failure_text(report))
        if "worker" in str(report.longrepr)[:300] and "crashed" in str(report.longrepr)[:300]:
            row["outcome"] = "crash"
            if report.nodeid in hard_timeouts(rec.path):
                row["outcome"] = "timeout"
                row["reason"] = ("TestTimeout: the worker was ended by the hard timeout "
                                 "(--msl-timeout + 30 s) in native code")
    elif report.when == "call":
        row.update(outcome="pass")
    else:
        return
    rec.done.add(report.nodeid)
    rec.write(row)


def pytest_internalerror(excrepr: Any, excinfo: Any) -> None:
    if _recorder is not None:
        _recorder.write({"internalerror": "".join(traceback.format_exception(excinfo.value))})


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if _recorder is not None and report.failed:
        _recorder.write({"collect_error": report.nodeid, "reason": str(report.longrepr)[-1500:]})
