"""layout.decode_layout against Triton's own to_linear_layout, basis for basis."""

from __future__ import annotations

import random

import pytest
from triton.experimental.gluon.language._layouts import (
    BlockedLayout,
    DotOperandLayout,
    SliceLayout,
)

from msltrans.errors import MetalNonRecoverableError
from msltrans.layout import decode_layout
from tests.support.triton_layouts import blocked_text, triton_linear

WARPS = [1, 2, 4, 8, 16]


def _split(total: int, rank: int, rng: random.Random) -> list[int]:
    out = [1] * rank
    for _ in range(total.bit_length() - 1):
        out[rng.randrange(rank)] *= 2
    return out


def _random_blocked(rng: random.Random, rank: int, num_warps: int) -> tuple:
    spt = [rng.choice([1, 1, 2, 4]) for _ in range(rank)]
    tpw = _split(32, rank, rng)
    wpc = _split(num_warps, rank, rng)
    order = list(range(rank))
    rng.shuffle(order)
    return spt, tpw, wpc, order


def _ours(text: str, shape: list[int]) -> tuple:
    ll = decode_layout(text, tuple(shape))
    return (list(ll.reg), list(ll.lane), list(ll.warp))


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_blocked_matches_triton(num_warps: int, rank: int) -> None:
    rng = random.Random(rank * 100 + num_warps)
    for _ in range(40):
        spt, tpw, wpc, order = _random_blocked(rng, rank, num_warps)
        shape = [rng.choice([1, 2, 4, 8, 16, 32, 64, 128]) for _ in range(rank)]
        want = triton_linear(BlockedLayout(spt, tpw, wpc, order), shape)
        assert _ours(blocked_text(spt, tpw, wpc, order), shape) == tuple(want), \
            (spt, tpw, wpc, order, shape)


@pytest.mark.parametrize("num_warps", WARPS)
def test_slice_matches_triton(num_warps: int) -> None:
    rng = random.Random(7 + num_warps)
    for _ in range(40):
        rank = rng.choice([2, 3])
        spt, tpw, wpc, order = _random_blocked(rng, rank, num_warps)
        dim = rng.randrange(rank)
        shape = [rng.choice([1, 4, 16, 64, 256]) for _ in range(rank - 1)]
        want = triton_linear(SliceLayout(dim, BlockedLayout(spt, tpw, wpc, order)), shape)
        text = f"#ttg.slice<{{dim = {dim}, parent = {blocked_text(spt, tpw, wpc, order)}}}>"
        assert _ours(text, shape) == tuple(want), (dim, spt, tpw, wpc, order, shape)


@pytest.mark.parametrize("num_warps", WARPS)
@pytest.mark.parametrize("op_idx", [0, 1])
def test_fma_dot_operand_matches_triton(num_warps: int, op_idx: int) -> None:
    rng = random.Random(31 * num_warps + op_idx)
    for _ in range(30):
        spt, tpw, wpc, order = _random_blocked(rng, 2, num_warps)
        shape = [rng.choice([8, 16, 32, 64]) for _ in range(2)]
        want = triton_linear(DotOperandLayout(op_idx, BlockedLayout(spt, tpw, wpc, order), 0),
                             shape)
        text = (f"#ttg.dot_op<{{opIdx = {op_idx}, "
                f"parent = {blocked_text(spt, tpw, wpc, order)}}}>")
        assert _ours(text, shape) == tuple(want), (op_idx, spt, tpw, wpc, order, shape)


def test_replicated_layout_has_one_owner_per_element() -> None:
    # 32 lanes x 4 warps over 16 elements: 8-fold replication.
    ll = decode_layout(blocked_text([1], [32], [4], [0]), (16,))
    reg_free, lane_free, warp_free = ll.free_masks()
    owners: dict[tuple[int, ...], int] = {}
    for w in range(ll.num_warps):
        for ln in range(ll.num_lanes):
            for r in range(ll.num_regs):
                if r & reg_free or ln & lane_free or w & warp_free:
                    continue
                c = ll.coord(r, ln, w)
                owners[c] = owners.get(c, 0) + 1
    assert sorted(owners) == [(i,) for i in range(16)]
    assert set(owners.values()) == {1}


def test_unsupported_layout_refuses() -> None:
    with pytest.raises(MetalNonRecoverableError, match="not supported"):
        decode_layout("#ttg.nvidia_mma<{versionMajor = 2}>", (16, 16))


def test_linear_encoding_round_trips_triton() -> None:
    # Triton's own linear layout of a blocked layout, printed as #ttg.linear, decodes back.
    spt, tpw, wpc, order = [2, 1], [4, 8], [2, 2], [0, 1]
    reg, lane, warp = triton_linear(BlockedLayout(spt, tpw, wpc, order), [32, 64])

    def fmt(bases: list) -> str:
        return "[" + ", ".join("[" + ", ".join(map(str, b)) + "]" for b in bases) + "]"

    text = (f"#ttg.linear<{{register = {fmt(reg)}, lane = {fmt(lane)}, warp = {fmt(warp)}, "
            "block = []}>")
    assert _ours(text, [32, 64]) == (reg, lane, warp)
    assert _ours(text, [32, 64]) == _ours(blocked_text(spt, tpw, wpc, order), [32, 64])


@pytest.mark.parametrize("num_warps", WARPS)
def test_locate_is_the_owner_inverse(num_warps: int) -> None:
    rng = random.Random(99 + num_warps)
    for _ in range(15):
        spt, tpw, wpc, order = _random_blocked(rng, 2, num_warps)
        shape = (rng.choice([2, 8, 32]), rng.choice([4, 16, 64]))
        ll = decode_layout(blocked_text(spt, tpw, wpc, order), shape)
        reg_free, lane_free, warp_free = ll.free_masks()
        for i in range(shape[0]):
            for j in range(shape[1]):
                r, ln, w = ll.locate((i, j))
                assert ll.coord(r, ln, w) == (i, j)
                assert not (r & reg_free or ln & lane_free or w & warp_free)


def _linear_text(reg: list, lane: list, warp: list) -> str:
    def fmt(bases: list) -> str:
        return "[" + ", ".join("[" + ", ".join(map(str, b)) + "]" for b in bases) + "]"
    return (f"#ttg.linear<{{register = {fmt(reg)}, lane = {fmt(lane)}, warp = {fmt(warp)}, "
            "block = []}>")


@pytest.mark.parametrize("seed", range(6))
def test_linear_fits_the_tensor_shape_like_triton(seed: int) -> None:
    """A #linear encoding made for one shape, used on a smaller or larger tensor (the size-1
    dim of an expand_dims before a broadcast keeps its parent's #linear): Triton broadcasts
    what overhangs and repeats in registers what is not covered. Decoding the bases verbatim
    put lanes at coordinate 1 of a size-1 dim (tl.flip on shapes with a trailing 1 was wrong)."""
    from triton.experimental.gluon.language._layouts import DistributedLinearLayout

    rng = random.Random(seed)
    for _ in range(30):
        rank = rng.choice([2, 3, 5])
        spt, tpw, wpc, order = _random_blocked(rng, rank, rng.choice([1, 2, 4]))
        full = [s * t * w * rng.choice([1, 2])
                for s, t, w in zip(spt, tpw, wpc, strict=True)]
        reg, lane, warp = triton_linear(BlockedLayout(spt, tpw, wpc, order), full)
        # the tensor: some dims shrunk (to 1 sometimes), some grown
        shape = [rng.choice([1, n // 2 or 1, n, n * 2]) for n in full]
        ll = DistributedLinearLayout([list(b) for b in reg], [list(b) for b in lane],
                                     [list(b) for b in warp], [], full)
        want = triton_linear(ll, shape)
        got = _ours(_linear_text(reg, lane, warp), shape)
        assert (sorted(got[0]), got[1], got[2]) == (sorted(want[0]), want[1], want[2]), \
            (reg, lane, warp, full, shape)
