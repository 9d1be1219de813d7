"""Compiled kernel libraries on disk: what a build leaves in the cache (`<key>.so` and its
`<key>.json` metadata) and how a later process finds it again without the compiler-side
modules (msltrans.sim.build imports the preprocessing machinery; a cache hit needs none).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from msltrans.sim.cache import cache_dir
from msltrans.sim.signatures import KernelSignature


@dataclass
class Built:
    library: Path
    kernels: list[KernelSignature]
    deps: dict[str, str] = field(default_factory=dict)   # include_dirs headers -> sha256


def file_hash(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def load_built(key: str) -> Built | None:
    """A cached build, or None."""
    out_dir = cache_dir()
    library, meta_path = out_dir / f"{key}.so", out_dir / f"{key}.json"
    if not (library.exists() and meta_path.exists()):
        return None
    meta = json.loads(meta_path.read_text())
    # Headers from include_dirs are not in the key: check the ones this build read.
    deps = meta.get("deps", {})
    if deps_changed(deps):
        return None
    return Built(library, [KernelSignature.from_json(k) for k in meta["kernels"]], deps)


def deps_changed(deps: dict[str, str]) -> bool:
    """Whether any header a build read (from include_dirs) changed since."""
    return any(file_hash(path) != digest for path, digest in deps.items())
