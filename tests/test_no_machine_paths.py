"""No committed file names a path of one developer's machine: a user has none of them.
Locations are arguments or environment variables, shown as placeholders (`<triton-src>`)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Directories under work, root or home/<user> at the file system root (the git grep check).
MACHINE_PATH = re.compile(r"/(work|root|home/[a-z_]+)/")


def test_no_absolute_machine_paths_in_tracked_files() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    hits = []
    for name in files:
        path = ROOT / name
        if not path.is_file() or path.suffix in (".npz", ".png", ".pdf"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if MACHINE_PATH.search(line) and "MACHINE_PATH" not in line and "git grep" not in line:
                hits.append(f"{name}:{number}: {line.strip()[:120]}")
    assert not hits, "machine paths (use placeholders or env vars):\n" + "\n".join(hits)
