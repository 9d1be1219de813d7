"""Is every test kernel's MSL byte-identical at two git refs? Run the tests at both, compare.

    python3 scripts/msl_identity.py --base main                  # main vs this working tree
    python3 scripts/msl_identity.py --base A --head B -- tests/lower -k dot
    python3 scripts/msl_identity.py --base main --keep build/msl  # keep both records
    python3 scripts/msl_identity.py --base-record build/msl/base  # reuse a kept base record
    python3 scripts/msl_identity.py --record build/msl/base -- tests/lower  # one side only
    python3 scripts/msl_identity.py --compare DIR_A DIR_B         # two records, no test run
    python3 scripts/msl_identity.py --base main --ignore-locations -- tests/e2e/test_fp8.py

Each side runs pytest (`-n` workers, default 2; the arguments after `--` choose the tests,
default the whole suite) with `MSLTRANS_RECORD_MSL=<folder>`: `lower_module` writes every
kernel it lowers there as `<kernel>-<sha256[:16]>.metal` (msltrans/lower/program.py). A ref
is checked out as a detached git worktree in a temporary folder (removed afterwards); the
working tree itself is used for `--head` left out. Both sides share one simulator build cache
(`$MSLTRANS_SIM_CACHE_DIR`, else the default), keyed by MSL text: a kernel whose MSL is
unchanged is built once, so the second side mostly only runs. Triton's own cache is a fresh
folder per side, so every kernel is lowered (and recorded) again.

A ref older than the recorder (no MSLTRANS_RECORD_MSL in its msltrans/) is recorded through a
pytest plugin that wraps `lower_module` in the test processes (kernels lowered in
subprocesses, e.g. Inductor's compile workers, are then not seen on that side: compare such
a record only with tests that lower in-process).

The comparison lists kernels whose MSL exists on one side only, with a unified diff where a
kernel name has one text on each side; exit status 0 when the two sets are identical, 1 when
they differ, 2 when a side recorded nothing. Test failures are reported but do not decide
the result (the MSL does). The MSL names each op's Triton source line (`// tt.load
kernels.py:32`), so a kernel moved to another file or line differs in those comments alone;
`--ignore-locations` compares the texts with every `<file>.py:<line>` masked (per kernel name,
the set of its texts on each side).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECORD_ENV = "MSLTRANS_RECORD_MSL"
REPO = Path(__file__).resolve().parent.parent

_PLUGIN = '''
"""Records lower_module's MSL for trees older than MSLTRANS_RECORD_MSL (msl_identity.py)."""
import functools
import hashlib
import os
from pathlib import Path


def pytest_configure(config):
    import msltrans.lower as lower
    import msltrans.lower.kernel as kernel

    inner = kernel.lower_module

    @functools.wraps(inner)
    def lower_module(*args, **kwargs):
        program = inner(*args, **kwargs)
        text = program.source.encode()
        digest = hashlib.sha256(text).hexdigest()[:16]
        folder = Path(os.environ["MSLTRANS_RECORD_MSL"])
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{program.kernel_name}-{digest}.metal"
        if not path.exists():
            tmp = folder / f".record-{os.getpid()}-{digest}"
            tmp.write_bytes(text)
            os.replace(tmp, path)
        return program

    kernel.lower_module = lower_module
    lower.lower_module = lower_module
'''


def _git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def _has_recorder(tree: Path) -> bool:
    return any(RECORD_ENV in p.read_text(errors="replace")
               for p in (tree / "msltrans").rglob("*.py"))


def _run_side(label: str, tree: Path, record: Path, work: Path, workers: int,
              pytest_args: list[str]) -> None:
    """Run the tests in `tree` with the recorder writing to `record`."""
    record.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env[RECORD_ENV] = str(record)
    env["TRITON_CACHE_DIR"] = str(work / f"triton-cache-{label}")
    env["PYTHONPATH"] = str(tree)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if not _has_recorder(tree):
        plugin_dir = work / "plugin"
        plugin_dir.mkdir(exist_ok=True)
        (plugin_dir / "msl_record_plugin.py").write_text(_PLUGIN)
        env["PYTHONPATH"] = f"{tree}{os.pathsep}{plugin_dir}"
        cmd += ["-p", "msl_record_plugin"]
        print(f"[{label}] no recorder in this tree: recording through a pytest plugin "
              "(in-process lowering only)")
    cmd += ["-n", str(workers)] if workers > 0 else ["-n", "0"]
    cmd += pytest_args
    print(f"[{label}] {tree}: {' '.join(cmd[1:])}", flush=True)
    start = time.monotonic()
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    tail = [ln for ln in done.stdout.splitlines() if ln.strip()][-1:] or ["(no output)"]
    print(f"[{label}] pytest exit {done.returncode} in {time.monotonic() - start:.0f} s: "
          f"{tail[0]}", flush=True)
    if done.returncode not in (0, 1):
        print(done.stdout[-4000:] + done.stderr[-4000:])


def _checkout(ref: str, where: Path) -> Path:
    commit = _git("rev-parse", "--verify", f"{ref}^{{commit}}")
    _git("worktree", "add", "--detach", str(where), commit)
    return where


def _records(folder: Path) -> dict[str, Path]:
    return {p.name: p for p in folder.glob("*.metal")}


def _kernel(filename: str) -> str:
    return filename[:-len(".metal")].rsplit("-", 1)[0]


_LOCATION = re.compile(r"[\w./-]+\.py:\d+(?::\d+)?")


def _masked(folder: Path) -> dict[str, set[str]]:
    """kernel name -> its texts with the source locations masked."""
    out: dict[str, set[str]] = {}
    for path in folder.glob("*.metal"):
        text = _LOCATION.sub("<file>.py:<line>", path.read_text())
        out.setdefault(_kernel(path.name), set()).add(text)
    return out


def compare_masked(base: Path, head: Path, max_diff_lines: int = 80) -> int:
    """compare() with the source locations masked (--ignore-locations)."""
    a, b = _masked(base), _masked(head)
    na, nb = sum(map(len, a.values())), sum(map(len, b.values()))
    print(f"base: {na} kernel texts ({len(a)} kernels) in {base}\n"
          f"head: {nb} kernel texts ({len(b)} kernels) in {head}, source locations masked")
    if not a or not b:
        print("a side recorded nothing: no comparison")
        return 2
    differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    if not differ:
        print(f"identical but for source locations: {na} kernel texts")
        return 0
    print(f"DIFFERENT: {len(differ)} kernel names: {differ}")
    for kernel in differ:
        only_a = sorted(a.get(kernel, set()) - b.get(kernel, set()))
        only_b = sorted(b.get(kernel, set()) - a.get(kernel, set()))
        print(f"\n== {kernel}: {len(only_a)} texts only in base, {len(only_b)} only in head")
        if len(only_a) == 1 and len(only_b) == 1:
            diff = list(difflib.unified_diff(only_a[0].splitlines(), only_b[0].splitlines(),
                                             "base", "head", lineterm="", n=2))
            print("\n".join(diff[:max_diff_lines]))
    return 1


def compare(base: Path, head: Path, max_diff_lines: int = 80) -> int:
    a, b = _records(base), _records(head)
    print(f"base: {len(a)} kernel texts in {base}\nhead: {len(b)} kernel texts in {head}")
    if not a or not b:
        print("a side recorded nothing: no comparison")
        return 2
    only_a = sorted(set(a) - set(b))
    only_b = sorted(set(b) - set(a))
    if not only_a and not only_b:
        print(f"identical: {len(a)} kernel texts, byte for byte")
        return 0
    by_kernel: dict[str, tuple[list[str], list[str]]] = {}
    for name in only_a:
        by_kernel.setdefault(_kernel(name), ([], []))[0].append(name)
    for name in only_b:
        by_kernel.setdefault(_kernel(name), ([], []))[1].append(name)
    print(f"DIFFERENT: {len(only_a)} texts only in base, {len(only_b)} only in head, "
          f"{len(by_kernel)} kernel names")
    for kernel, (in_a, in_b) in sorted(by_kernel.items()):
        print(f"\n== {kernel}: base-only {in_a or '-'}  head-only {in_b or '-'}")
        if len(in_a) == 1 and len(in_b) == 1:
            diff = list(difflib.unified_diff(
                a[in_a[0]].read_text().splitlines(), b[in_b[0]].read_text().splitlines(),
                f"base/{in_a[0]}", f"head/{in_b[0]}", lineterm="", n=2))
            print("\n".join(diff[:max_diff_lines]))
            if len(diff) > max_diff_lines:
                print(f"... {len(diff) - max_diff_lines} more diff lines")
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", 1)[0],
        usage="%(prog)s (--base REF | --base-record DIR | --record DIR) [--head REF] [options] "
              "[-- PYTEST ARGS]\n       %(prog)s --compare DIR_A DIR_B")
    parser.add_argument("--base", help="git ref of the 'before' side")
    parser.add_argument("--base-record", type=Path,
                        help="a kept record folder to use as the 'before' side")
    parser.add_argument("--head", help="git ref of the 'after' side (default: the working tree)")
    parser.add_argument("--keep", type=Path,
                        help="keep the records in DIR/base and DIR/head")
    parser.add_argument("--workers", type=int, default=2, help="pytest -n (default 2)")
    parser.add_argument("--record", type=Path, metavar="DIR",
                        help="only record the head side into DIR (a base for later runs)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar="DIR",
                        help="only compare two record folders")
    parser.add_argument("--ignore-locations", action="store_true",
                        help="compare with the Triton source locations (file.py:line) masked")
    args, rest = parser.parse_known_args()
    pytest_args = rest[1:] if rest[:1] == ["--"] else rest
    check = compare_masked if args.ignore_locations else compare
    if args.compare:
        return check(*args.compare)
    if not args.base and not args.base_record and not args.record:
        parser.error("give --base REF or --base-record DIR")
    work = Path(tempfile.mkdtemp(prefix="msl-identity-"))
    keep = args.keep.resolve() if args.keep else work
    trees: list[Path] = []
    try:
        if args.record:
            tree = _checkout(args.head, work / "head-tree") if args.head else REPO
            trees += [tree] if args.head else []
            shutil.rmtree(args.record, ignore_errors=True)
            _run_side("head", tree, args.record.resolve(), work, args.workers, pytest_args)
            print(f"{len(_records(args.record))} kernel texts in {args.record}")
            return 0
        if args.base_record:
            base_record = args.base_record.resolve()
        else:
            base_record = keep / "base"
            shutil.rmtree(base_record, ignore_errors=True)
            trees.append(_checkout(args.base, work / "base-tree"))
            _run_side("base", trees[-1], base_record, work, args.workers, pytest_args)
        head_record = keep / "head"
        shutil.rmtree(head_record, ignore_errors=True)
        if args.head:
            trees.append(_checkout(args.head, work / "head-tree"))
            head_tree = trees[-1]
        else:
            head_tree = REPO
        _run_side("head", head_tree, head_record, work, args.workers, pytest_args)
        return check(base_record, head_record)
    finally:
        for tree in trees:
            _git("worktree", "remove", "--force", str(tree))
        shutil.rmtree(work, ignore_errors=True)  # the records too, unless --keep

if __name__ == "__main__":
    sys.exit(main())
