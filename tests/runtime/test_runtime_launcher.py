"""The launcher on its own: the contract between Triton's signature and the MSL's buffers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from msltrans.errors import MetalNonRecoverableError
from msltrans.runtime.launch import Launcher
from tests.support.plugin_fakes import RecordingEngine


def _param(i, kind, ty, cast=None):
    return {"name": f"a{i}", "kind": kind, "triton_type": ty, "buffer_index": i, "arg_cast": cast}


def _src(signature, names=None):
    fn = SimpleNamespace(arg_names=names or list(signature))
    return SimpleNamespace(signature=signature, fn=fn)


def _meta(params, num_warps=2):
    return SimpleNamespace(name="k", params=params, num_warps=num_warps, warp_size=32,
                           threads_per_group=num_warps * 32)


def test_buffer_count_must_match_runtime_args():
    src = _src({"x_ptr": "*fp32", "n": "i32", "B": "constexpr"})
    with pytest.raises(MetalNonRecoverableError, match="declares 1 Metal buffers.*x_ptr, n"):
        Launcher(src, _meta([_param(0, "pointer", "*fp32")]), RecordingEngine())


def test_kind_mismatch_is_refused():
    src = _src({"x_ptr": "*fp32", "n": "i32"})
    params = [_param(0, "pointer", "*fp32"), _param(1, "pointer", "*fp32")]
    with pytest.raises(MetalNonRecoverableError, match="`n` is i32 for Triton"):
        Launcher(src, _meta(params), RecordingEngine())


def test_tensor_descriptor_expands_like_decompose_descriptor():
    from triton.backends.driver import decompose_descriptor
    from triton.tools.tensor_descriptor import TensorDescriptor

    src = _src({"d": "tensordesc<fp32[16, 8]>", "n": "i32"})
    types = ["*fp32"] + ["i64"] * 4 + ["i1", "i1"] + ["i32"] * 2 + ["i64"] * 2 + ["i32"]
    params = [_param(i, "pointer" if t.startswith("*") else "scalar", t)
              for i, t in enumerate(types)]
    launcher = Launcher(src, _meta(params), RecordingEngine())
    x = torch.zeros(40, 24)
    desc = TensorDescriptor(x, [40, 24], [24, 1], [16, 8], padding="nan")
    bound = launcher.bind([desc, 7])
    assert bound[0] is x
    # Triton's own expansion of a host descriptor for GPUs without TMA metadata
    assert bound[1:-1] == [int(v) for v in decompose_descriptor(desc)[1:]]
    assert bound[5] == 1 and bound[-1] == 7  # padding="nan"; the scalar after the descriptor
    with pytest.raises(MetalNonRecoverableError, match="rank-2 TensorDescriptor"):
        launcher.bind([x, 7])
    with pytest.raises(MetalNonRecoverableError, match="declares 1 Metal buffers"):
        Launcher(src, _meta(params[:1]), RecordingEngine())


def test_ttgir_style_signature_and_casts():
    # A signature read back from a .ttgir file: integer keys, f32 spelling, no constexprs.
    src = SimpleNamespace(signature={0: "*f32", 1: "f32", 2: "i32", 3: "i1"})
    params = [_param(0, "pointer", "*fp32"), _param(1, "scalar", "fp32", "float"),
              _param(2, "scalar", "i32", "int32"), _param(3, "scalar", "i1", "bool")]
    engine = RecordingEngine()
    launcher = Launcher(src, _meta(params, num_warps=4), engine)
    x = torch.zeros(4)
    fn = engine.load("", "k")
    launcher(3, 2, 1, None, fn, None, None, None, None, x, 0.5, 7, True)
    (call,) = engine.calls
    assert call.args == (x, 0.5, 7, 1)
    assert call.arg_casts == {2: "int32", 3: "uint8"}
    assert call.threads == (3 * 128, 2, 1) and call.group_size == (128, 1, 1)


def test_wrong_arg_count_is_reported():
    src = _src({"x_ptr": "*fp32"})
    engine = RecordingEngine()
    launcher = Launcher(src, _meta([_param(0, "pointer", "*fp32")]), engine)
    with pytest.raises(MetalNonRecoverableError, match="expects 1 arguments, got 2"):
        launcher(1, 1, 1, None, engine.load("", "k"), None, None, None, None,
                 torch.zeros(1), 3)


def test_grid_beyond_32_bit_thread_counts_is_refused():
    src = _src({"x_ptr": "*fp32"})
    engine = RecordingEngine()
    launcher = Launcher(src, _meta([_param(0, "pointer", "*fp32")], num_warps=32), engine)
    with pytest.raises(MetalNonRecoverableError, match="32-bit thread counts"):
        launcher(2**22 + 1, 1, 1, None, engine.load("", "k"), None, None, None, None,
                 torch.zeros(1))
