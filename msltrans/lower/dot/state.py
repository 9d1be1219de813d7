"""Per-kernel state of the dot family (`em.family(DotState)`): which converts were folded
into the dot that stages them, which dots of the loop being emitted keep their accumulator
resident, and where the fragment dots' pinned tiles live (fragment_loop.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from msltrans.ir.model import Op, Value
from msltrans.lower.emitter import Emitter

TILES = "msl_tiles"
# em.pin_tiles levels (kernel.py tries them in turn until the kernel fits 32 KB):
PIN_SEPARATE = 2  # every dot's tiles at their own offsets
PIN_SHARED = 1  # loop-invariant tiles at their own offsets, the per-step ones share one
PIN_NONE = 0  # every dot on the shared scratch


@dataclass
class Pinned:
    """Where one fragment-path dot's staged operands live during its loop."""

    offsets: dict[str, int]  # "sa" / "sb" -> byte offset in msl_tiles
    hoisted: set[str]  # the tiles staged before the loop
    lead_barrier: bool  # a barrier before this dot's in-loop copies

    @property
    def stages_in_loop(self) -> bool:
        return bool(set(self.offsets) - self.hoisted)


@dataclass(frozen=True)
class StagedBefore:
    """The loop-invariant tiles the last pinning loop had in msl_tiles when it ended (it
    staged them before it ran, or found them staged): where that loop stands (the id of its
    block, its index there) and `em.scratch_uses` when it ended (fragment_loop.py)."""

    block: int
    index: int
    scratch_uses: int
    keys: frozenset[tuple[object, ...]]


@dataclass
class TileArena:
    """`msl_tiles`, allocated like a stack by the loops that pin tiles (fragment_loop.py)."""

    top: int = 0
    high: int = 0
    pinned: dict[int, Pinned] = field(default_factory=dict)  # tt.dot result id -> Pinned
    staged: StagedBefore | None = None


@dataclass
class DotState:
    folded: set[int] = field(default_factory=set)  # converts a dot stages itself
    # dot result id -> (Resident, its matrices, the carried variable) while its loop is
    # being emitted (resident.py fills and empties it)
    resident: dict[int, Any] = field(default_factory=dict)
    prelowered: set[int] = field(default_factory=set)  # converts already produced
    tiles: TileArena = field(default_factory=TileArena)
    # id(tt.store op) -> (direct_store.DirectStore, the accumulator matrices) for the stores
    # a resident loop's epilogue does straight from its fragments
    direct: dict[int, Any] = field(default_factory=dict)


def prelower(em: Emitter, convert: Op) -> None:
    """A ttg.convert_layout whose result an earlier lowering already produced (and bound):
    the convert itself then emits nothing (`take_prelowered`)."""
    em.family(DotState).prelowered.add(convert.results[0].id)


def take_prelowered(em: Emitter, convert: Op) -> bool:
    return convert.results[0].id in em.family(DotState).prelowered


def mark_folded(em: Emitter, v: Value) -> None:
    em.family(DotState).folded.add(v.id)


def is_folded(em: Emitter, v: Value) -> bool:
    return v.id in em.family(DotState).folded


def staging_source(em: Emitter, v: Value) -> Value:
    """The value whose registers the dot stages for operand `v` (the folded convert's
    source, or `v` itself)."""
    if is_folded(em, v):
        return em.producers[v.id].operands[0]
    return v


def resident(em: Emitter) -> dict[int, Any]:
    """dot result id -> (Resident, its matrices, the carried variable) while its loop is
    being emitted (resident.py fills and empties it)."""
    return em.family(DotState).resident


def tile_arena(em: Emitter) -> TileArena:
    return em.family(DotState).tiles


def pinned_bytes(em: Emitter) -> int:
    """Bytes of `msl_tiles` the kernel needs (0: none)."""
    return tile_arena(em).high


def pinned(em: Emitter, dot_out: Value) -> Pinned | None:
    return tile_arena(em).pinned.get(dot_out.id)
