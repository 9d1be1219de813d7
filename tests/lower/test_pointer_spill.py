"""Which pointers keep a slot of Metal's 31-entry buffer table and how the rest are laid out
in the argument buffer (msltrans/lower/kernel_args.py)."""

from __future__ import annotations

import pytest

from msltrans.abi import limits
from msltrans.lower.kernel_args import PointerStruct, direct_pointers
from msltrans.toolchain import launch_comment


@pytest.mark.parametrize("pointers, scalars, debug, direct", [
    (31, False, False, 31), (32, False, False, 30),   # the table alone
    (30, True, False, 30), (31, True, False, 29),     # with the scalar struct
    (29, True, True, 29), (30, True, True, 28),       # with the struct and the debug buffer
    (40, True, False, 29), (2, True, True, 2),
])
def test_direct_pointers(pointers, scalars, debug, direct):
    assert direct_pointers(pointers, scalars, debug) == direct
    used = min(direct, pointers) + int(direct < pointers) + int(scalars) + int(debug)
    assert used <= limits.BUFFER_TABLE_SLOTS


def test_the_bound_every_engine_binds_directly():
    assert limits.BUFFER_TABLE_SLOTS == 31 and limits.DIRECT_POINTER_SLOTS == 29
    for pointers in range(limits.DIRECT_POINTER_SLOTS + 1):
        assert direct_pointers(pointers, True, True) == pointers
    assert limits.MAX_ARGUMENT_BUFFER_POINTERS * limits.GPU_ADDRESS_BYTES == \
        limits.SET_BYTES_LIMIT


def test_pointer_struct_layout_is_stated_in_the_msl():
    struct = PointerStruct("k_spill", (("a", "device float*"), ("m", "device char*")))
    text = struct.declaration()
    assert text.isascii() and struct.size == 16
    assert "device float* a;  // byte 0" in text and "device char* m;  // byte 8" in text
    assert "static_assert(sizeof(k_spill) == 16" in text
    assert "static_assert(alignof(k_spill) == 8" in text
    assert struct.locals() == ["device float* a = msl_spill.a;",
                               "device char* m = msl_spill.m;"]


def test_dump_names_the_argument_buffer_entries():
    text = launch_comment({"name": "k", "threads_per_group": 32, "shared": 0, "params": [
        {"name": "x", "kind": "pointer", "triton_type": "*fp32", "buffer_index": 0},
        {"name": "y", "kind": "pointer", "triton_type": "*fp32", "buffer_index": 1, "slot": 0},
    ]})
    assert "buffer(0): x *fp32" in text
    assert "buffer(1) address 0: y *fp32 (in the argument buffer of GPU addresses)" in text


def test_simulator_runs_keep_the_argument_buffers_alignment(monkeypatch) -> None:  # noqa: ANN001
    """toolchain.run_on_simulator hands the simulator the alignment the kernel assumes for
    every pointer, those in the argument buffer included (keyed (buffer, slot))."""
    from types import SimpleNamespace

    from msltrans import sim
    from msltrans.lower.program import MslProgram
    from msltrans.toolchain import run_on_simulator

    seen: dict = {}

    def kernel(*args, **kwargs) -> None:  # noqa: ANN002, ANN003
        seen.update(kwargs)

    monkeypatch.setattr(sim, "compile_shader", lambda source: SimpleNamespace(k=kernel))
    program = MslProgram(source="", kernel_name="k", num_warps=1, threads_per_group=32,
                         params=(), shared_bytes=0, buffer_alignment=((0, 16),),
                         spilled_alignment=((1, 16),))
    monkeypatch.setattr(MslProgram, "argument_buffer_index", property(lambda self: 29))
    monkeypatch.setattr(MslProgram, "engine_args", lambda self, args: args)
    run_on_simulator(program, (1,), ())
    assert seen["buffer_alignment"] == {0: 16, (29, 1): 16}
