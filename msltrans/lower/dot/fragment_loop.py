"""The fragment-path dots of one scf.for: tiles of their own, loop-invariant operands
staged once, and only the barriers a step needs.

Every other scratch user shares `msl_scratch` from offset 0 and brackets each use with
barriers. The fragment-path tt.dot ops directly in a loop body instead get their A / B
tiles at fixed offsets of a second threadgroup array, `msl_tiles`, for the whole loop
(allocated like a stack: a later loop reuses the bytes, nested loops stack on top):

- an operand whose value is defined outside the loop (attention's Q) is staged ONCE, before
  the loop, after one barrier (the previous readers of those bytes: an earlier loop, or
  this loop's previous run when it is nested); a barrier after the hoisted copies makes
  them visible;
- the other operands (K, V) are staged every step, then one barrier, then the multiply;
- the barrier BEFORE a dot's staging (earlier readers of its tile done) is needed only
  when nothing else separates the previous step's multiply from this step's copies. With
  two or more dots staging in the loop body, the other dot's post-copy barrier, which every
  thread passes (the dots sit directly in the body, not under an scf.if), does: each tile
  is read between its own barrier and the next dot's. So attention's step has two
  barriers, after the K copies and after the V copies.

`msl_tiles` points into `msl_scratch`, above the most scratch any other user needs while
tiles are pinned (outside those loops the bytes are ordinary scratch again: every scratch
user writes only after a barrier, and a loop's tiles are written only after its entry
barrier). A loop whose loop-invariant operand is the one the previous pinning loop of the same block
staged, at the same offset and in the same form, with nothing between the two loops that
can write threadgroup memory (no op with regions, no call, no scratch user: `scratch_uses`
unchanged), finds the copy still there and does not stage it again: tutorial 06's causal
forward runs its two stages' loops on one Q, whose registers then die after the first
copy instead of living through the first loop.

The whole must fit Metal's 32 KB; when it does not, kernel.py lowers again with the
per-step tiles of all dots sharing one region (each dot then needs its barrier before the
copies too: 4 per attention step, Q still staged once), then without pinned tiles (every
dot back on the shared scratch).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from msltrans.errors import MetalNonRecoverableError
from msltrans.ir.model import Block, Op, Region, Value
from msltrans.lower.dot import loop_schedule, staging
from msltrans.lower.dot.choose import choose
from msltrans.lower.dot.fragment_mma import FragPlan, operand_source
from msltrans.lower.dot.info import BYTES, align16, check, render
from msltrans.lower.dot.state import PIN_SEPARATE, TILES, Pinned, StagedBefore, tile_arena
from msltrans.lower.emitter import Emitter


def _defined_in(region: Region) -> set[int]:
    ids: set[int] = set()
    for block in region.blocks:
        ids.update(v.id for v in block.args)
        for op in block.ops:
            ids.update(v.id for v in op.results)
            for inner in op.regions:
                ids |= _defined_in(inner)
    return ids


def _calls(region: Region) -> bool:
    return any(op.name == "tt.call" or any(_calls(r) for r in op.regions)
               for block in region.blocks for op in block.ops)


def _fragment_plan(em: Emitter, dot: Op) -> FragPlan | None:
    outer = em.op
    try:
        em.op = dot
        path, plan = choose(em, check(em, dot))
    except MetalNonRecoverableError:
        return None  # the dot refuses itself, at its own location
    finally:
        em.op = outer
    return plan if path == "fragment" and isinstance(plan, FragPlan) else None


def _still_staged(em: Emitter, here: tuple[Block, int] | None) -> frozenset[tuple[object, ...]]:
    """Keys of the hoisted tiles still in msl_tiles when the loop at `here` starts (module
    docstring)."""
    before = tile_arena(em).staged
    if before is None or here is None or id(here[0]) != before.block:
        return frozenset()
    between = here[0].ops[before.index + 1:here[1]]
    if (before.index >= here[1] or em.scratch_uses != before.scratch_uses
            or any(op.regions or op.name == "tt.call" for op in between)):
        return frozenset()
    return before.keys


@dataclass
class FragmentLoop:
    """ops_scf's handle for one loop: `leave` frees its tiles; `order` is the body's op
    order to emit (loop_schedule.py: global loads before the first dot), None to keep it."""

    mark: int = 0
    dots: list[int] = field(default_factory=list)
    order: tuple[Op, ...] | None = None
    # what `leave` records as staged (its scratch_uses filled in then)
    staged: StagedBefore | None = None

    def leave(self, em: Emitter) -> None:
        if not self.dots:
            return
        a = tile_arena(em)
        for d in self.dots:
            a.pinned.pop(d, None)
        a.top = self.mark
        em.tiles_live -= 1
        a.staged = (None if self.staged is None
                    else replace(self.staged, scratch_uses=em.scratch_uses))


def enter_loop(em: Emitter, loop: Op) -> FragmentLoop:
    """Before scf.for `loop`'s header: pin the tiles of the fragment-path dots directly in
    its body and stage the loop-invariant operands (module docstring)."""
    if not em.pin_tiles or len(loop.regions[0].blocks) != 1:
        return FragmentLoop()
    block = loop.regions[0].blocks[0]
    if _calls(loop.regions[0]):
        return FragmentLoop()  # a callee's scratch use is not tracked beside the tiles
    plans = [(op, p) for op in block.ops if op.name == "tt.dot"
             for p in [_fragment_plan(em, op)] if p is not None]
    if not plans:
        return FragmentLoop()
    a = tile_arena(em)
    inside = _defined_in(loop.regions[0])
    shared = em.pin_tiles < PIN_SEPARATE  # in-loop tiles of all dots at one offset
    # loads before the first dot only where the per-step tiles share one region (the GPU
    # proxy's evidence: loop_schedule.py)
    handle = FragmentLoop(mark=a.top, order=loop_schedule.loads_first(loop, block, plans[0][0])
                          if shared else None)
    hoist: list[tuple[staging.Tile, int, Value, str]] = []
    layout: list[tuple[Op, Pinned]] = []
    in_loop: list[tuple[dict[str, int], list[tuple[str, int]]]] = []
    for op, p in plans:
        info = check(em, op)
        offsets: dict[str, int] = {}
        hoisted: set[str] = set()
        staged_here: list[tuple[str, int]] = []
        for tile, v, conv in ((p.a_tile, info.a, info.a_conv), (p.b_tile, info.b, info.b_conv)):
            if tile is None:
                continue
            size = align16(tile.stored_rows * tile.ld * BYTES[tile.elem])
            src = operand_source(em, v)
            if src.id not in inside:
                offsets[tile.name] = a.top
                a.top += size
                hoisted.add(tile.name)
                hoist.append((tile, offsets[tile.name], src, conv))
            else:
                staged_here.append((tile.name, size))
        layout.append((op, Pinned(offsets, hoisted, lead_barrier=False)))
        in_loop.append((offsets, staged_here))
    # The tiles staged every step: one region per dot, or (shared) one region all reuse.
    base = a.top
    for offsets, staged_here in in_loop:
        at = base if shared else a.top
        for name, size in staged_here:
            offsets[name] = at
            at += size
        a.top = max(a.top, at)
    a.high = max(a.high, a.top)
    em.tiles_live += 1
    stagers = [pin for _, pin in layout if pin.stages_in_loop]
    for op, pin in layout:
        # Separate regions: another dot's post-copy barrier separates this tile's readers
        # from its next copies (module docstring); shared: the previous dot read these bytes.
        pin.lead_barrier = pin.stages_in_loop and (shared or len(stagers) < 2)
        a.pinned[op.results[0].id] = pin
        handle.dots.append(op.results[0].id)
    em.line(f"threadgroup_barrier(mem_flags::mem_threadgroup);  // earlier readers of "
            f"{TILES}[{handle.mark}..{a.top}) done")
    # what a hoisted copy is (None: a value being emitted in another layout, never reused)
    keys = [None if src.id in em.layout_overrides
            else (src.id, off, tile.elem, tile.rows, tile.cols, tile.ld, tile.transposed, conv)
            for tile, off, src, conv in hoist]
    position = em.positions.get(id(loop))
    kept = _still_staged(em, position)
    if position is not None and any(keys):
        handle.staged = StagedBefore(id(position[0]), position[1], 0,
                                     frozenset(k for k in keys if k is not None))
    for (tile, off, _, _), key in zip(hoist, keys, strict=True):
        if key in kept:
            em.line(f"// {tile.name}: the copy the previous loop staged is still at "
                    f"{TILES}[{off}] (lower/dot/fragment_loop.py)")
    hoist = [h for h, key in zip(hoist, keys, strict=True) if key not in kept]
    if hoist:
        em.line("{  // loop-invariant dot operands, staged once for the whole loop")
        em.indent(1)
        for tile, off, src, conv in hoist:
            name = em.fresh(tile.name)
            render(em, "scratch_region", ctype=tile.elem, name=name, scratch=TILES,
                   byte_offset=off)
            staging.stage(em, src, staging.Tile(name, tile.elem, tile.rows, tile.cols,
                                                tile.ld, tile.transposed), conv)
        em.indent(-1)
        em.line("}")
        em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // hoisted tiles written")
    return handle
