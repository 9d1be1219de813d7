"""The self-test's worker process: runs the named cases in order and appends one JSON line
per event to the results file (`{"start": name}`, then `{"row": {...}}`), flushed and synced
before the case goes on, so the runner (msltrans/selftest/runner.py) knows which case a
crash or a hang belongs to. It stops after a case that ends in an error, so the next case
starts in a fresh process."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any


def _append(path: Path, message: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(message, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m msltrans.selftest.worker")
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--time", action="store_true")
    parser.add_argument("--extra", default=None)
    parser.add_argument("cases", nargs="+")
    args = parser.parse_args(argv)

    from msltrans.selftest.checks import run_case
    from msltrans.selftest.runner import _engine, all_cases, load_reference

    engine, device, driver = _engine()
    reference = load_reference()
    sync = driver.get_device_interface().synchronize if args.time else None
    by_name = {c.name: c for c in all_cases(args.extra)}
    for name in args.cases:
        _append(args.results, {"start": name})
        row = run_case(by_name[name], device, args.full, reference, sync, engine)
        _append(args.results, {"row": row})
        if row["verdict"] == "error":
            # An exception may leave the GPU's state broken (a command buffer the watchdog
            # stopped raises in torch): the runner starts a fresh worker for the rest.
            return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
