"""Run records without the paths of the machine that made them.

Commands and source trees go into committed files (docs/conformance*.md, the baseline); a
reader has none of the runner's directories, so absolute paths become placeholders named for
their option (`--triton-src /x/y` → `--triton-src <triton-src>`) and a source tree is named
by what it is: its repository and commit, read from its git metadata.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path


def _placeholder(option: str | None) -> str:
    return f"<{option.lstrip('-')}>" if option else "<path>"


def portable_argv(argv: Sequence[str]) -> list[str]:
    """`argv` with every absolute path replaced by `<option-name>`."""
    out: list[str] = []
    previous: str | None = None
    for arg in argv:
        if arg.startswith("--") and "=" in arg:
            option, value = arg.split("=", 1)
            out.append(f"{option}={_placeholder(option)}" if os.path.isabs(value) else arg)
        elif os.path.isabs(arg):
            out.append(_placeholder(previous))
        else:
            out.append(arg)
        previous = arg if arg.startswith("-") else None
    return out


def tree_commit(src: Path, mirror_env: str) -> str | None:
    """`<hash> <date>` of the tree's checkout: `src/.git`, or the git dir named by the
    environment variable `mirror_env` (a bare mirror the tree was exported from)."""
    candidates = [src / ".git"]
    if os.environ.get(mirror_env):
        candidates.append(Path(os.environ[mirror_env]))
    for git_dir in candidates:
        if git_dir.exists():
            r = subprocess.run(["git", "--git-dir", str(git_dir), "log", "-1", "--format=%h %cs"],
                               capture_output=True, text=True)
            if r.returncode == 0 and r.stdout.strip():
                return r.stdout.strip()
    return None
