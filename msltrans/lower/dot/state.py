"""Per-kernel state of the dot family: which converts were folded into the dot that stages
them, and which dots of the loop being emitted keep their accumulator resident."""

from __future__ import annotations

import weakref
from typing import Any

from msltrans.ir.model import Op, Value
from msltrans.lower.emitter import Emitter

_folded: weakref.WeakKeyDictionary[Emitter, set[int]] = weakref.WeakKeyDictionary()
_resident: weakref.WeakKeyDictionary[Emitter, dict[int, Any]] = weakref.WeakKeyDictionary()
_prelowered: weakref.WeakKeyDictionary[Emitter, set[int]] = weakref.WeakKeyDictionary()


def prelower(em: Emitter, convert: Op) -> None:
    """A ttg.convert_layout whose result an earlier lowering already produced (and bound):
    the convert itself then emits nothing (`take_prelowered`)."""
    _prelowered.setdefault(em, set()).add(convert.results[0].id)


def take_prelowered(em: Emitter, convert: Op) -> bool:
    return convert.results[0].id in _prelowered.get(em, set())


def mark_folded(em: Emitter, v: Value) -> None:
    _folded.setdefault(em, set()).add(v.id)


def is_folded(em: Emitter, v: Value) -> bool:
    return v.id in _folded.get(em, set())


def staging_source(em: Emitter, v: Value) -> Value:
    """The value whose registers the dot stages for operand `v` (the folded convert's
    source, or `v` itself)."""
    if is_folded(em, v):
        return em.producers[v.id].operands[0]
    return v


def resident(em: Emitter) -> dict[int, Any]:
    """dot result id -> (Resident, its matrices, the carried variable) while its loop is
    being emitted (resident.py fills and empties it)."""
    return _resident.setdefault(em, {})
