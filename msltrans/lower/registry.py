"""Op name → lowering function. Family modules register with `@lowers(...)`, and checks that
run before every op's lowering with `@before_every_op`.

Every module named `ops_*.py` in the wings of this package (elementwise/, memory/, dot/,
...) is imported on first use, so a new op family is a new file: no edit to the core.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import TYPE_CHECKING

from msltrans.errors import MetalNonRecoverableError

if TYPE_CHECKING:
    from msltrans.ir.model import Op
    from msltrans.lower.emitter import Emitter

Lowering = Callable[["Emitter", "Op"], None]
_REGISTRY: dict[str, Lowering] = {}
_CHECKS: list[Lowering] = []
_loaded = False


def lowers(*names: str) -> Callable[[Lowering], Lowering]:
    def register(fn: Lowering) -> Lowering:
        for name in names:
            if name in _REGISTRY and _REGISTRY[name] is not fn:
                raise RuntimeError(f"{name} registered twice ({_REGISTRY[name].__module__}, "
                                   f"{fn.__module__})")
            _REGISTRY[name] = fn
        return fn
    return register


def before_every_op(check: Lowering) -> Lowering:
    """Run `check(em, op)` before the lowering of every op (it refuses with `em.fail`)."""
    if check not in _CHECKS:
        _CHECKS.append(check)
    return check


def _load_families() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import msltrans.lower as pkg

    found = pkgutil.walk_packages(pkg.__path__, prefix="msltrans.lower.")
    for info in sorted(found, key=lambda i: i.name):
        if info.name.rsplit(".", 1)[-1].startswith("ops_"):
            importlib.import_module(info.name)


def lookup(op: Op) -> Lowering:
    _load_families()
    fn = _REGISTRY.get(op.name)
    if fn is None:
        raise MetalNonRecoverableError(
            "no Metal lowering for this op", op=op.name, location=op.loc.short(),
            hint="supported ops: msltrans.lower.registry.supported_ops()")
    return fn


def checks() -> tuple[Lowering, ...]:
    """The `before_every_op` checks, in registration order."""
    _load_families()
    return tuple(_CHECKS)


def supported_ops() -> list[str]:
    _load_families()
    return sorted(_REGISTRY)


def lowering_of(name: str) -> Lowering:
    """The lowering function registered for `name` (for docs and introspection)."""
    _load_families()
    return _REGISTRY[name]
