#!/usr/bin/env python3
"""Run Triton's own unit tests against msltrans and write docs/conformance.md + a baseline.

    python scripts/run_upstream_tests.py --triton-src <triton-src> \
        --files language/test_core.py -k "test_bin_op or test_cast" --per-function 20

The upstream files run unmodified from `<triton-src>/python/test/unit` on CPU tensors through
the Metal simulator (`TRITON_INTERPRET` removed from the environment, `--device cpu`, the
upstream `python/conftest.py` defines the `device` fixture). Our pytest plugin
`scripts/conformance/msltrans_conformance.py` (`-p msltrans_conformance`) samples, times out,
turns refusals into expected failures and records every outcome; `summary.py` categorises.
See DEVELOPERS.md for where an upstream tree comes from.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from conformance import runner_common, summary

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_DIR = ROOT / "scripts" / "conformance"

DEFAULT_FILES = ("language/test_core.py", "language/test_standard.py", "language/test_random.py",
                 "language/test_tuple.py", "language/test_subprocess.py", "runtime/test_launch.py")
# A bare git dir the tree was exported from (its commit goes into the run record).
MIRROR_ENV = "MSLTRANS_TRITON_MIRROR"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--triton-src", type=Path, required=True, help="upstream Triton checkout")
    p.add_argument("--files", nargs="+", default=list(DEFAULT_FILES),
                   help="test files relative to python/test/unit")
    p.add_argument("-k", dest="keyword", default=None, help="pytest -k expression")
    p.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (0: in process)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per test")
    p.add_argument("--per-function", type=int, default=0, help="cases per test function (0: all)")
    p.add_argument("--max-tests", type=int, default=0, help="cases in all (0: no cap)")
    p.add_argument("--seed", default="0", help="sample seed")
    p.add_argument("--fp64", choices=("refuse", "downcast"), default="refuse",
                   help="msltrans fp64 policy (MSLTRANS_FP64); refuse = count as hardware-bounded")
    p.add_argument("--raw", type=Path, default=ROOT / "build" / "conformance" / "results.jsonl",
                   help="where the per-test rows go")
    p.add_argument("--out", type=Path, default=None, help="markdown summary (docs/conformance.md)")
    p.add_argument("--baseline", type=Path, default=None, help="baseline JSON to (re)write")
    p.add_argument("--append", action="store_true",
                   help="add this run as a further section of --out (and merge the baseline)")
    p.add_argument("--title", default="Run", help="the section title of this run in --out")
    p.add_argument("--summary-only", action="store_true", help="re-summarise --raw, run nothing")
    p.add_argument("--notes", default="", help="free text recorded in the summary")
    p.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    return p.parse_args(argv)


def check_tree(src: Path) -> Path:
    unit = src / "python" / "test" / "unit"
    if not unit.is_dir():
        sys.exit(f"{unit} does not exist: --triton-src must be a Triton checkout (DEVELOPERS.md)")
    if not (src / "python" / "conftest.py").is_file():
        sys.exit(f"{src}/python/conftest.py is missing (it defines the `device` fixture); "
                 f"check it out: git --git-dir=${MIRROR_ENV} --work-tree={src} checkout HEAD -- "
                 "python/conftest.py pytest.ini")
    return unit


def pytest_command(args: argparse.Namespace) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", *args.files, "--device", "cpu",
           "-p", "msltrans_conformance", "-p", "no:cacheprovider", "-q", "-rN",
           "--tb=line", "--msl-timeout", str(args.timeout), "--msl-sample-seed", args.seed]
    if args.workers > 0:
        cmd += ["-n", str(args.workers)]
    if args.keyword:
        cmd += ["-k", args.keyword]
    if args.per_function:
        cmd += ["--msl-per-function", str(args.per_function)]
    if args.max_tests:
        cmd += ["--msl-max-tests", str(args.max_tests)]
    return cmd + list(args.pytest_args)


def environment(args: argparse.Namespace) -> dict[str, str]:
    env = runner_common.environment(args.raw, PLUGIN_DIR)
    env["MSLTRANS_FP64"] = args.fp64 if args.fp64 == "refuse" else ""
    return env


def upstream_commit(src: Path) -> str:
    return runner_common.suite_commit(src, MIRROR_ENV, "intel/intel-xpu-backend-for-triton",
                                      "`<triton-src>`")


def run_info(args: argparse.Namespace, argv: list[str], wall: float | None) -> dict[str, Any]:
    sel = [f"files: {' '.join(args.files)}"]
    if args.keyword:
        sel.append(f"-k `{args.keyword}`")
    if args.per_function:
        sel.append(f"at most {args.per_function} cases per test function (sha256 order, "
                   f"seed {args.seed})")
    if args.max_tests:
        sel.append(f"at most {args.max_tests} cases in all")
    sel.append(f"timeout {args.timeout:g} s per test; fp64 policy: {args.fp64}")
    return runner_common.run_info("scripts/run_upstream_tests.py", argv,
                                  upstream_commit(args.triton_src), sel, args.workers, wall,
                                  args.notes)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    wall = None
    rc = 0
    if not args.summary_only:
        unit = check_tree(args.triton_src)
        rc, wall = runner_common.run_pytest(pytest_command(args), unit, environment(args),
                                            args.raw)
    res, info = runner_common.load_run(args.raw, args.summary_only, args.notes,
                                       lambda: run_info(args, argv, wall))
    if args.out:
        existing = args.out.read_text(encoding="utf-8") if args.append and args.out.exists() \
            else None
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(summary.document(res, info, args.title, existing), encoding="utf-8")
        print(f"wrote {args.out}")
    else:
        print(summary.render(res, info))
    if args.baseline:
        summary.write_baseline(res, args.baseline, info, merge=args.append)
        print(f"wrote {args.baseline} ({len(res.passing())} passing ids)")
    return runner_common.exit_status(rc)


if __name__ == "__main__":
    sys.exit(main())
