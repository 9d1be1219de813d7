"""The walker rebuilds Triton's op tree, names, locations, attributes and constants."""

from __future__ import annotations

from pathlib import Path

from msltrans.ir import PointerType, ScalarType, TensorType, read_module, read_ttgir_file
from msltrans.toolchain import to_ttgir
from tests.support.kernels import (
    broadcast_add_kernel,
    loop_kernel,
    reduce_scan_while_kernel,
    vadd_kernel,
)

ADD_SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


def _ops(region) -> list:
    return [op for block in region.blocks for op in block.ops]


def test_vector_add_walk() -> None:
    mod = read_module(to_ttgir(vadd_kernel, ADD_SIG, {"BLOCK": 1024}, 4))
    assert mod.num_warps == 4 and mod.threads_per_warp == 32
    assert mod.target == "metal:apple-m1"
    fn = mod.function()
    assert fn.name == "vadd_kernel" and fn.public
    assert [a.name for a in fn.args] == ["a_ptr", "b_ptr", "out_ptr", "n"]
    assert fn.args[0].value.type == PointerType(ScalarType("f32"))
    names = [op.name for op in _ops(fn.body)]
    assert names[-1] == "tt.return"
    for want in ("tt.get_program_id", "tt.make_range", "tt.load", "tt.store", "arith.addf"):
        assert want in names
    by_name = {op.name: op for op in _ops(fn.body)}
    rng = by_name["tt.make_range"]
    assert rng.attrs["start"] == 0 and rng.attrs["end"] == 1024
    assert rng.results[0].name == "idx"
    assert isinstance(rng.results[0].type, TensorType)
    assert rng.results[0].type.shape == (1024,)
    assert rng.results[0].type.encoding.startswith("#ttg.blocked<")
    assert by_name["arith.cmpi"].attrs["predicate"] == 2  # slt
    store = by_name["tt.store"]
    assert store.loc.file.endswith("kernels.py") and store.loc.line is not None
    # Operands refer to the results of earlier ops (SSA ids are shared).
    produced = {r.id for op in _ops(fn.body) for r in op.results} | {a.value.id for a in fn.args}
    assert all(v.id in produced for op in _ops(fn.body) for v in op.operands)


def test_broadcast_kernel_2d() -> None:
    sig = {"x_ptr": "*fp32", "row_ptr": "*fp32", "out_ptr": "*fp32", "M": "i32", "N": "i32",
           "stride_m": "i32"}
    mod = read_module(to_ttgir(broadcast_add_kernel, sig, {"BLOCK_M": 16, "BLOCK_N": 32}, 4))
    ops = _ops(mod.function().body)
    names = {op.name for op in ops}
    assert {"tt.expand_dims", "tt.broadcast"} <= names
    axes = sorted(op.attrs["axis"] for op in ops if op.name == "tt.expand_dims")
    assert set(axes) == {0, 1}
    pids = [op.attrs["axis"] for op in ops if op.name == "tt.get_program_id"]
    assert sorted(pids) == [0, 1]


def test_loop_and_if_regions() -> None:
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    mod = read_module(to_ttgir(loop_kernel, sig, {"BLOCK": 128}, 4))
    ops = _ops(mod.function().body)
    loop = next(op for op in ops if op.name == "scf.for")
    body = loop.regions[0].blocks[0]
    assert len(body.args) == 2  # induction variable + one loop-carried tensor
    assert isinstance(body.args[1].type, TensorType)
    assert body.ops[-1].name == "scf.yield"
    branch = next(op for op in body.ops if op.name == "scf.if")
    assert len(branch.regions) == 2
    assert [o.name for o in branch.regions[1].blocks[0].ops] == ["arith.subf", "scf.yield"]
    consts = [op for op in ops if op.name == "arith.constant"]
    floats = sorted(op.attrs["value"] for op in consts if op.attrs.get("splat"))
    assert floats == [0.0, 0.5]


def test_saved_ttgir_round_trip(tmp_path: Path) -> None:
    live = to_ttgir(vadd_kernel, ADD_SIG, {"BLOCK": 256}, 2)
    path = tmp_path / "add.ttgir"
    path.write_text(live.str())
    a, b = read_module(live), read_ttgir_file(path)
    assert a.num_warps == b.num_warps == 2
    fa, fb = a.function(), b.function()
    assert [o.name for o in _ops(fa.body)] == [o.name for o in _ops(fb.body)]
    assert [o.attrs for o in _ops(fa.body)] == [o.attrs for o in _ops(fb.body)]
    assert [o.loc for o in _ops(fa.body)] == [o.loc for o in _ops(fb.body)]
    assert [str(r.type) for o in _ops(fa.body) for r in o.results] == \
        [str(r.type) for o in _ops(fb.body) for r in o.results]


def test_generic_form_ops_and_inlined_locations() -> None:
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    mod = read_module(to_ttgir(reduce_scan_while_kernel, sig, {"BLOCK": 128}, 4))
    ops = _ops(mod.function().body)
    red = next(op for op in ops if op.name == "tt.reduce")
    scan = next(op for op in ops if op.name == "tt.scan")
    assert red.attrs["axis"] == 0 and scan.attrs["reverse"] is True
    body = red.regions[0].blocks[0]
    assert len(body.args) == 2 and body.ops[-1].name == "tt.reduce.return"
    # tl.sum is inlined from triton/language: the location is the user's line, not Triton's.
    assert red.loc.file.endswith("kernels.py") and red.results[0].name == "s"
    loop = next(op for op in ops if op.name == "scf.while")
    assert len(loop.regions) == 2
    assert loop.regions[0].blocks[0].ops[-1].name == "scf.condition"
    assert loop.regions[1].blocks[0].ops[-1].name == "scf.yield"


def test_divisibility_reaches_the_arguments() -> None:
    mod = read_module(to_ttgir(vadd_kernel, ADD_SIG, {"BLOCK": 256}, 4,
                               divisible_by_16=("a_ptr", "n")))
    div = {a.name: a.divisibility for a in mod.function().args}
    assert div == {"a_ptr": 16, "b_ptr": None, "out_ptr": None, "n": 16}
