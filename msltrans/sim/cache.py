"""The on-disk compile cache: `$MSLTRANS_SIM_CACHE_DIR` (default ~/.cache/msltrans/sim).

Entries are written to a temporary name and renamed into place, so concurrent processes
(pytest-xdist) never see half-written files. A process about to build an entry takes the
entry's lock first (`build_lock`), so a second process that wants the same entry waits for
the first one's build and then loads it instead of compiling it again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:   # not POSIX: no lock, concurrent builds of one entry just both compile
    fcntl = None  # type: ignore[assignment]

from msltrans import settings

_SIM_DIR = Path(__file__).parent
# Everything that changes what a given MSL source compiles to.
_VERSIONED_FILES = ("prepare.py", "discover.py", "signatures.py", "entries.py", "build.py",
                    "compiler.py", "large.py", "split.py", "unroll.py", "store.py", "nan_canon.py",
                    "attributes.py", "lanes/plugin.py", "lanes/lanes_pass.cpp", "lanes/matrix.cpp",
                    "lanes/objects.cpp", "lanes/live.cpp", "lanes/pass.h")


def cache_dir() -> Path:
    root = settings.raw(settings.SIM_CACHE_DIR)
    path = Path(root) if root else Path.home() / ".cache" / "msltrans" / "sim"
    path.mkdir(parents=True, exist_ok=True)
    return path


def tree_hash(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path.name).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def headers_hash() -> str:
    include = _SIM_DIR / "include"
    files = [p for p in include.rglob("*") if p.is_file()]
    files += [_SIM_DIR / name for name in _VERSIONED_FILES]
    return tree_hash(files)


def runtime_sources() -> list[Path]:
    runtime = _SIM_DIR / "runtime"
    return sorted(p for p in runtime.iterdir() if p.suffix in (".c", ".h", ".S"))


def atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def temp_output(path: Path) -> Path:
    """A unique sibling name to build into before an atomic rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    os.close(fd)
    return Path(tmp)


@contextlib.contextmanager
def build_lock(name: str) -> Iterator[None]:
    """Hold the cache's lock for entry `name` (an advisory lock on locks/<name>.lock,
    released when the block ends or the process dies): callers check for the entry again
    inside it and build it only if it is still missing."""
    if fcntl is None:
        yield
        return
    locks = cache_dir() / "locks"
    locks.mkdir(exist_ok=True)
    fd = os.open(locks / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)   # closing the descriptor releases the lock
