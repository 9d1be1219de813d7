"""The launcher on its own: the contract between Triton's signature and the MSL's buffers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from msltrans.errors import MetalNonRecoverableError
from msltrans.lower.kernel_args import layout_struct
from msltrans.runtime.launch import Launcher
from tests.support.plugin_fakes import RecordingEngine

_MSL = {"fp32": "float", "i32": "int", "i1": "bool", "i64": "long", "i8": "char",
        "i16": "short", "fp16": "half", "bf16": "bfloat", "u32": "int", "u64": "long"}


def _params(types):
    """The parameter table the lowering writes: pointers in order, scalars in one struct."""
    scalars = [(f"a{i}", _MSL[t]) for i, t in enumerate(types) if not t.startswith("*")]
    struct = layout_struct("k_args", scalars)
    offsets = {f.name: f.offset for f in struct.fields}
    n_ptr = sum(t.startswith("*") for t in types)
    params, ptr = [], 0
    for i, t in enumerate(types):
        if t.startswith("*"):
            params.append({"name": f"a{i}", "kind": "pointer", "triton_type": t,
                           "buffer_index": ptr})
            ptr += 1
        else:
            params.append({"name": f"a{i}", "kind": "scalar", "triton_type": t,
                           "buffer_index": n_ptr, "offset": offsets[f"a{i}"]})
    return params, (struct.size if scalars else 0)


def _src(signature, names=None):
    fn = SimpleNamespace(arg_names=names or list(signature))
    return SimpleNamespace(signature=signature, fn=fn)


def _meta(types, num_warps=2):
    params, size = _params(types)
    return SimpleNamespace(name="k", params=params, num_warps=num_warps, warp_size=32,
                           threads_per_group=num_warps * 32, args_size=size)


def test_buffer_count_must_match_runtime_args():
    src = _src({"x_ptr": "*fp32", "n": "i32", "B": "constexpr"})
    with pytest.raises(MetalNonRecoverableError, match="declares 1 arguments.*x_ptr, n"):
        Launcher(src, _meta(["*fp32"]), RecordingEngine())


def test_kind_mismatch_is_refused():
    src = _src({"x_ptr": "*fp32", "n": "i32"})
    with pytest.raises(MetalNonRecoverableError, match="`n` is i32 for Triton"):
        Launcher(src, _meta(["*fp32", "*fp32"]), RecordingEngine())


def test_tensor_descriptor_expands_like_decompose_descriptor():
    import triton.backends.driver
    from triton.tools.tensor_descriptor import TensorDescriptor

    decompose_descriptor = getattr(triton.backends.driver, "decompose_descriptor", None)
    if decompose_descriptor is None:
        pytest.skip("this Triton has no shared decompose_descriptor to compare with (3.8 on)")
    src = _src({"d": "tensordesc<fp32[16, 8]>", "n": "i32"})
    types = ["*fp32"] + ["i64"] * 4 + ["i1", "i1"] + ["i32"] * 2 + ["i64"] * 2 + ["i32"]
    launcher = Launcher(src, _meta(types), RecordingEngine())
    x = torch.zeros(40, 24)
    desc = TensorDescriptor(x, [40, 24], [24, 1], [16, 8], padding="nan")
    bound = launcher.bind([desc, 7])
    assert bound[0] is x and len(bound) == 2
    # Triton's own expansion of a host descriptor for GPUs without TMA metadata, then the
    # scalar after the descriptor, read back from the packed struct
    expected = [int(v) for v in decompose_descriptor(desc)[1:]] + [7]
    params = _meta(types).params
    got = []
    for p in params[1:]:
        width = {"i64": 8, "i32": 4, "i1": 1}[p["triton_type"]]
        raw = bytes(bound[1][p["offset"]:p["offset"] + width])
        got.append(int.from_bytes(raw, "little", signed=True))
    assert got == [int(v) for v in expected]
    assert expected[4] == 1  # padding="nan"
    with pytest.raises(MetalNonRecoverableError, match="rank-2 TensorDescriptor"):
        launcher.bind([x, 7])
    with pytest.raises(MetalNonRecoverableError, match="declares 1 arguments"):
        Launcher(src, _meta(types[:1]), RecordingEngine())


def test_ttgir_style_signature_and_casts():
    # A signature read back from a .ttgir file: integer keys, f32 spelling, no constexprs.
    src = SimpleNamespace(signature={0: "*f32", 1: "f32", 2: "i32", 3: "i1"})
    engine = RecordingEngine()
    launcher = Launcher(src, _meta(["*fp32", "fp32", "i32", "i1"], num_warps=4), engine)
    x = torch.zeros(4)
    fn = engine.load("", "k")
    launcher(3, 2, 1, None, fn, None, None, None, None, x, 0.5, 7, True)
    (call,) = engine.calls
    # float 0.5 at 0, int 7 at 4, bool at 8; padded to 12 bytes
    assert call.args == (x, [0, 0, 0, 0x3F, 7, 0, 0, 0, 1, 0, 0, 0])
    assert call.arg_casts == {1: "uint8"}
    assert call.threads == (3 * 128, 2, 1) and call.group_size == (128, 1, 1)


def test_wrong_arg_count_is_reported():
    src = _src({"x_ptr": "*fp32"})
    engine = RecordingEngine()
    launcher = Launcher(src, _meta(["*fp32"]), engine)
    with pytest.raises(MetalNonRecoverableError, match="expects 1 arguments, got 2"):
        launcher(1, 1, 1, None, engine.load("", "k"), None, None, None, None,
                 torch.zeros(1), 3)


def test_grid_beyond_32_bit_thread_counts_is_refused():
    src = _src({"x_ptr": "*fp32"})
    engine = RecordingEngine()
    launcher = Launcher(src, _meta(["*fp32"], num_warps=32), engine)
    with pytest.raises(MetalNonRecoverableError, match="32-bit thread counts"):
        launcher(2**22 + 1, 1, 1, None, engine.load("", "k"), None, None, None, None,
                 torch.zeros(1))


def _spilled_meta(pointers: int, direct: int):
    """A kernel of `pointers` pointers and one i32 whose last pointers are in the argument
    buffer at `direct`, the scalar struct after it (what msltrans.lower writes)."""
    params = []
    for i in range(pointers):
        slot = i - direct if i >= direct else None
        params.append({"name": f"p{i}", "kind": "pointer", "triton_type": "*fp32",
                       "buffer_index": min(i, direct), "slot": slot})
    params.append({"name": "n", "kind": "scalar", "triton_type": "i32",
                   "buffer_index": direct + 1, "offset": 0})
    return SimpleNamespace(name="k", params=params, num_warps=1, warp_size=32,
                           threads_per_group=32, args_size=4)


def test_spilled_pointers_bind_as_one_list_before_the_struct():
    names = [f"p{i}" for i in range(40)] + ["n"]
    src = _src(dict.fromkeys(names[:-1], "*fp32") | {"n": "i32"}, names)
    engine = RecordingEngine()
    launcher = Launcher(src, _spilled_meta(40, 29), engine)
    tensors = [torch.zeros(4) for _ in range(40)]
    launcher(1, 1, 1, None, engine.load("", "k"), None, None, None, None, *tensors, 5)
    (call,) = engine.calls
    assert len(call.args) == 31 and call.arg_casts == {30: "uint8"}
    assert all(a is t for a, t in zip(call.args[:29], tensors[:29], strict=True))
    assert len(call.args[29]) == 11 and all(
        a is t for a, t in zip(call.args[29], tensors[29:], strict=True))
    assert bytes(call.args[30]) == (5).to_bytes(4, "little")


def test_mps_engine_refuses_the_argument_buffer_saying_why():
    """torch.mps.compile_shader can send GPU addresses but never makes their buffers
    resident (runtime/mps.py): the MPS engine refuses, naming the limit and the reason."""
    names = [f"p{i}" for i in range(40)] + ["n"]
    src = _src(dict.fromkeys(names[:-1], "*fp32") | {"n": "i32"}, names)
    mps = RecordingEngine(name="mps", device_type="mps", argument_buffers=False)
    with pytest.raises(MetalNonRecoverableError) as info:
        Launcher(src, _spilled_meta(40, 29), mps)
    message = str(info.value)
    assert "40 pointer arguments" in message and "31 slots" in message
    assert "p29, p30" in message and "useResource" in message and "resident" in message
    assert "at most 29 tensors" in message  # the hint: msltrans.abi.limits.DIRECT_POINTER_SLOTS
