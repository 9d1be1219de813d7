"""msltrans/abi/alignment.py: the one keying of the simulator's buffer alignment, shared by the
launcher and MslProgram.sim_alignment."""

from __future__ import annotations

import pytest

from msltrans.abi.alignment import sim_alignment
from msltrans.lower.program import MslParam, MslProgram


def test_direct_buffers_by_index_spilled_pointers_by_argument_buffer_and_slot() -> None:
    got = sim_alignment([(0, 16), (2, 8)], [[0, 4], [1, 16]], 30)
    assert got == {0: 16, 2: 8, (30, 0): 4, (30, 1): 16}


def test_spilled_alignment_needs_an_argument_buffer() -> None:
    assert sim_alignment([(1, 4)], [], None) == {1: 4}
    with pytest.raises(ValueError, match="argument buffer"):
        sim_alignment([], [(0, 4)], None)


def test_program_and_launcher_metadata_give_the_same_keys() -> None:
    """MslProgram puts its argument buffer after the direct pointers: the index the launcher
    passes (the number of direct pointers)."""
    params = (MslParam("a", "pointer", "*fp32", 0, "device float*"),
              MslParam("b", "pointer", "*fp32", 1, "device float*", slot=0),
              MslParam("c", "pointer", "*fp32", 1, "device float*", slot=1))
    program = MslProgram(source="", kernel_name="k", num_warps=1, threads_per_group=32,
                         params=params, shared_bytes=0, buffer_alignment=((0, 16),),
                         spilled_alignment=((1, 8),))
    assert program.argument_buffer_index == 1
    assert program.sim_alignment == sim_alignment([(0, 16)], [(1, 8)], 1) == {0: 16, (1, 1): 8}
