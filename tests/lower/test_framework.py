"""The lowering framework: registry misses, params and dispatch metadata, annotations,
type map (fp64 policy) and layout decoding refusals."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from msltrans.ir import read_module
from msltrans.ir.types import ScalarType
from msltrans.lower import lower_module, lowers, msl_types, registry, supported_ops
from msltrans.lower.values import float_literal, int_literal
from msltrans.toolchain import to_ttgir
from tests.support.kernels import vadd_kernel
from tests.support.run_kernel import check_msl_compiles, compile_ttgir, dispatch, run_kernel
from tests.support.ttgir_gen import elementwise_kernel_1d, write

ADD_SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


def _add_program(num_warps: int = 4, block: int = 1024):
    return lower_module(read_module(to_ttgir(vadd_kernel, ADD_SIG, {"BLOCK": block},
                                             num_warps)))


def test_program_metadata() -> None:
    p = _add_program(num_warps=8)
    assert p.kernel_name == "vadd_kernel"
    assert p.num_warps == 8 and p.threads_per_group == 256
    assert [(q.name, q.kind, q.triton_type, q.buffer_index) for q in p.params] == [
        ("a_ptr", "pointer", "*fp32", 0), ("b_ptr", "pointer", "*fp32", 1),
        ("out_ptr", "pointer", "*fp32", 2), ("n", "scalar", "i32", 3)]
    # the scalar lives in the argument struct, bound after the pointers
    assert p.params[3].offset == 0 and p.args_size == 4 and p.arg_casts == {3: "uint8"}
    assert p.shared_bytes == 0
    check_msl_compiles(p.source)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_kernel_states_its_group_size(num_warps: int) -> None:
    """`[[max_total_threads_per_threadgroup(num_warps * 32)]]` on the kernel (MSL 5.1.3): the
    pipeline's maximum is the group size every launch uses, and a larger dispatch is refused
    (on the simulator as on Apple's GPU)."""
    import msltrans.sim as sim

    p = _add_program(num_warps=num_warps, block=256)
    t = 32 * num_warps
    assert f"[[max_total_threads_per_threadgroup({t})]]\nkernel void vadd_kernel(" in p.source
    kernel = getattr(sim.compile_shader(p.source), p.kernel_name)
    assert kernel.max_threads_per_threadgroup == t
    a, b = np.arange(256, dtype=np.float32), np.ones(256, np.float32)
    out = np.zeros(256, np.float32)
    kernel(*p.engine_args((a, b, out, 256)), threads=(t, 1, 1), group_size=(t, 1, 1),
           arg_casts=p.arg_casts)
    np.testing.assert_array_equal(out, a + b)
    if t < 1024:
        with pytest.raises(sim.LaunchError, match="max_total_threads_per_threadgroup"):
            kernel(*p.engine_args((a, b, out, 256)), threads=(2 * t, 1, 1),
                   group_size=(2 * t, 1, 1), arg_casts=p.arg_casts)


def test_msl_is_annotated() -> None:
    src = _add_program().source
    assert "Triton kernel `vadd_kernel` (kernels.py:" in src
    assert "num_warps = 4 -> 128 threads" in src
    assert "#ttg.blocked<{sizePerThread = [1]" in src  # the layouts used
    assert re.search(r"// tt\.load  kernels\.py:\d+", src)
    assert re.search(r"// tt\.store  kernels\.py:\d+", src)
    # Names come from the Python variables Triton kept in locations.
    for name in ("prog_0", "first_0", "idx_0", "live_1", "total_0"):
        assert name in src


def test_registry_miss_names_op_and_line(monkeypatch) -> None:  # noqa: ANN001
    mod = read_module(to_ttgir(vadd_kernel, ADD_SIG, {"BLOCK": 256}, 4))
    supported_ops()  # load every family first, then take one lowering away
    monkeypatch.delitem(registry._REGISTRY, "tt.make_range")
    with pytest.raises(MetalNonRecoverableError) as info:
        lower_module(mod)
    err = info.value
    assert err.op == "tt.make_range"
    assert err.location is not None and re.match(r"kernels\.py:\d+$", err.location)
    assert err.hint and "supported ops" in err.hint
    assert "cannot lower `tt.make_range` at kernels.py:" in str(err)


def test_registry_rejects_double_registration() -> None:
    supported_ops()  # every family registered, whatever ran before in this worker
    with pytest.raises(RuntimeError, match="registered twice"):
        @lowers("tt.make_range")
        def other(em, op) -> None:  # noqa: ANN001
            pass


def test_type_map() -> None:
    assert [msl_types.scalar_ctype(ScalarType(n)) for n in
            ("i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32")] == [
        "bool", "char", "short", "int", "long", "half", "bfloat", "float"]
    # fp8e4nv / fp8e5 are one-byte storage types decoded by ops_fp8.py
    assert [msl_types.scalar_ctype(ScalarType(n)) for n in ("f8E4M3FN", "f8E5M2")] == [
        "uchar", "uchar"]
    # the AMD FNUZ variants are not implemented: refused, with the supported ones named
    with pytest.raises(MetalNonRecoverableError, match="float8e4nv"):
        msl_types.scalar_ctype(ScalarType("f8E4M3FNUZ"))


def test_fp64_downcasts_with_warning_or_refuses(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    path = write(tmp_path, "f64", elementwise_kernel_1d(
        64, 2, ["f64"], "f64", "%res = arith.addf %x0, %x0 : tensor<64xf64, #L>"))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        p = compile_ttgir(path)
    assert any("fp64" in str(w.message) for w in seen)
    assert "double" not in p.source
    monkeypatch.setenv("MSLTRANS_FP64", "refuse")
    with pytest.raises(MetalNonRecoverableError, match="fp64"):
        compile_ttgir(path)


def test_linear_layout_runs(tmp_path: Path) -> None:
    # A #ttg.linear layout with permuted and replicated bases, end to end.
    text = elementwise_kernel_1d(64, 4, ["f32"], "f32",
                                 "%res = arith.addf %x0, %x0 : tensor<64xf32, #L>")
    text = text.replace("#L = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], "
                        "warpsPerCTA = [4], order = [0]}>",
                        "#L = #ttg.linear<{register = [[32]], lane = [[2], [1], [0], [8], [16]],"
                        " warp = [[4], [0]], block = []}>")
    assert "#ttg.linear" in text
    program = compile_ttgir(write(tmp_path, "lin", text))
    x = np.arange(100, dtype=np.float32)
    out = np.zeros(100, np.float32)
    dispatch(program, (2,), (x, out, 100))
    np.testing.assert_array_equal(out, x + x)


def test_replicated_store_is_owner_only(tmp_path: Path) -> None:
    # 16 elements over 4 warps x 32 lanes: the store guard must pick one owner.
    src = compile_ttgir(write(tmp_path, "rep", elementwise_kernel_1d(
        16, 4, ["f32"], "f32", "%res = arith.addf %x0, %x0 : tensor<16xf32, #L>"))).source
    assert re.search(r"return true && \(lane & 16u\) == 0u && \(warp & 3u\) == 0u;", src)


def test_literals_are_exact() -> None:
    assert float_literal(0.1, "float") == "0.10000000149011612f"
    assert float_literal(float("inf"), "float") == "as_type<float>(0x7f800000u)"
    assert float_literal(1.5, "half") == "half(1.5f)"
    assert int_literal(-(2**31), "int") == "int(-2147483647 - 1)"
    assert int_literal(255, "char") == "char(-1)"
    assert int_literal(-(2**63), "long") == "(-9223372036854775807L - 1L)"


@triton.jit
def dense_const_kernel(out_ptr):
    r = tl.arange(0, 64)
    tl.store(out_ptr + r, r * 3 + 1)


def test_constant_folded_kernel_runs() -> None:
    out = np.zeros(64, np.int32)
    program = run_kernel(dense_const_kernel, (1,), out, num_warps=2)
    np.testing.assert_array_equal(out, np.arange(64) * 3 + 1)
    assert "tt.make_range" in program.source or "_table" in program.source
