"""msltrans._triton_compat and the keyword attribute reader, on the Triton in hand.

Every choice is made by what Triton has. Each test checks the choice against Triton itself
(its bindings, its passes, its dataclasses) or against a stand-in that has or lacks the one
thing the choice looks at.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import triton
import triton.language as tl
from triton._C.libtriton import ir
from triton.compiler.errors import CompilationError

from msltrans import _triton_compat as compat
from msltrans.ir import keyword_attrs as K
from msltrans.ir import text as T
from msltrans.ir.walker import _INT_ATTRS
from msltrans.toolchain import to_ttgir

# -- the import-time check -----------------------------------------------------------------


def test_the_triton_in_hand_has_everything_msltrans_needs() -> None:
    assert compat.missing_features(compat._required_roots()) == []
    compat.check_triton()


def test_a_missing_pass_is_named_with_the_version_found() -> None:
    roots = compat._required_roots()
    ttir = SimpleNamespace(**{k: getattr(roots["passes"].ttir, k)
                              for k in dir(roots["passes"].ttir) if k != "add_triton_licm"})
    roots["passes"] = SimpleNamespace(common=roots["passes"].common, ttir=ttir,
                                      ttgpuir=roots["passes"].ttgpuir)
    with pytest.raises(compat.TritonFeatureError) as err:
        compat.check_triton(roots, version="3.5.0")
    assert "passes.ttir.add_triton_licm" in str(err.value)
    assert "Triton 3.5.0" in str(err.value)
    assert isinstance(err.value, ImportError)


def test_a_missing_binding_is_named() -> None:
    roots = dict(compat._required_roots())
    roots["ir"] = SimpleNamespace(**{k: getattr(ir, k) for k in dir(ir) if k != "operation"})
    missing = compat.missing_features(roots)
    assert "ir.operation" in missing
    assert all(m.startswith("ir.operation") for m in missing)


# -- the fp-fusion knob --------------------------------------------------------------------


class _Knobs36:
    """Triton 3.6-3.8's language knobs: a default, no resolver."""

    def __init__(self, default: bool) -> None:
        self.default_fp_fusion = default


class _Knobs39(_Knobs36):
    """Triton 3.9's: a resolver that also honours a forced disable."""

    def __init__(self, default: bool, force_disable: bool) -> None:
        super().__init__(default)
        self.force_disable_fp_fusion = force_disable
        self.asked: list[bool | None] = []

    def fp_fusion_enabled(self, requested: bool | None) -> bool:
        self.asked.append(requested)
        chosen = self.default_fp_fusion if requested is None else requested
        return chosen and not self.force_disable_fp_fusion


@pytest.mark.parametrize("requested", [None, True, False])
@pytest.mark.parametrize("default", [True, False])
def test_fp_fusion_without_the_resolver(requested: bool | None, default: bool) -> None:
    want = default if requested is None else requested
    assert compat.fp_fusion_enabled(requested, _Knobs36(default)) is want


@pytest.mark.parametrize("requested", [None, True, False])
@pytest.mark.parametrize("force", [True, False])
def test_fp_fusion_goes_through_the_resolver_where_it_exists(requested, force) -> None:
    knobs = _Knobs39(True, force)
    got = compat.fp_fusion_enabled(requested, knobs)
    assert knobs.asked == [requested]  # Triton's own resolver decided
    assert got is knobs.fp_fusion_enabled(requested)


def test_fp_fusion_on_the_triton_in_hand_follows_the_request() -> None:
    assert compat.fp_fusion_enabled(False) is False
    assert compat.fp_fusion_enabled(True) is True


# -- integer attributes read from the text -------------------------------------------------


@triton.jit
def _keyword_ops(x_ptr, y_ptr, z_ptr, n, f, BLOCK: tl.constexpr):
    pid = tl.program_id(1)
    npg = tl.num_programs(2)
    offs = pid * BLOCK + tl.arange(3, BLOCK + 3)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=offs >= npg)
    c = (x > y) | (x != f) | (x <= 2.0) | (x == y) | (x < f) | (x >= 1.0)
    u = offs.to(tl.uint32)
    d = (u > 5) & (offs != n) & (u <= 9) & (offs == 3) & (u < 7) & (u >= 2) & (offs > 1)
    h = tl.clamp(x, 0.0, 1.0)
    h2 = x.to(tl.float16, fp_downcast_rounding="rtz")
    h3 = x.to(tl.float16, fp_downcast_rounding="rtne")
    tl.atomic_add(z_ptr + offs, x, mask=m, sem="release", scope="cta")
    tl.atomic_max(z_ptr + offs, h, mask=m, sem="relaxed", scope="sys")
    tl.atomic_xchg(z_ptr + offs, h, mask=m & c & d)
    tl.atomic_cas(z_ptr.to(tl.pointer_type(tl.int32)), 0, 1, sem="acquire", scope="gpu")
    tl.store(y_ptr + offs, h2.to(tl.float32) + h3.to(tl.float32), mask=m)


def _keyword_module() -> object:
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32", "f": "fp32",
           "BLOCK": "constexpr"}
    return to_ttgir(_keyword_ops, sig, {"BLOCK": 64})


@pytest.mark.skipif(not compat.has_int_attr_binding(),
                    reason="this Triton has no get_int_attr binding to compare with (3.6)")
def test_keyword_attributes_read_from_text_match_the_bindings() -> None:
    mod = _keyword_module()
    ops: list = []
    mod.walk(lambda o: ops.append(o))
    lines = [ln for ln in T.read_op_lines(mod.str()) if ln.name != "builtin.module"]
    by_name: dict[str, list] = {}
    for ln in lines:
        by_name.setdefault(ln.name, []).append(ln)
    checked = 0
    seen: dict[str, int] = {}
    for o in ops:
        name = o.get_name()
        if name not in by_name:
            continue
        line = by_name[name][seen.get(name, 0)]
        seen[name] = seen.get(name, 0) + 1
        from_text = K.keyword_int_attrs(name, line.text)
        for key in _INT_ATTRS.get(name, ()):
            if key in from_text:
                assert from_text[key] == o.get_int_attr(key), (name, key, line.text)
                checked += 1
    # every table took part: predicates of both kinds, axes, rounding, NaN, atomics
    assert checked >= 30
    assert {"arith.cmpi", "arith.cmpf", "tt.get_program_id", "tt.get_num_programs",
            "tt.fp_to_fp", "tt.clampf", "tt.atomic_rmw", "tt.atomic_cas"} <= set(seen)


@pytest.mark.parametrize(("table", "enum", "names"), [
    (K.RMW_OPS, "ATOMIC_OP", {"and": "AND", "or": "OR", "xor": "XOR", "add": "ADD",
                              "fadd": "FADD", "max": "MAX", "min": "MIN", "umax": "UMAX",
                              "umin": "UMIN", "exch": "XCHG"}),
    (K.MEM_SEMANTICS, "MEM_SEMANTIC", {"relaxed": "RELAXED", "acquire": "ACQUIRE",
                                       "release": "RELEASE", "acq_rel": "ACQUIRE_RELEASE"}),
    (K.MEM_SCOPES, "MEM_SYNC_SCOPE", {"gpu": "GPU", "cta": "CTA", "sys": "SYSTEM"}),
    (K.ROUNDING_MODES, "ROUNDING_MODE", {"rtz": "RTZ", "rtne": "RTNE"}),
    (K.PROPAGATE_NAN, "PROPAGATE_NAN", {"none": "NONE", "all": "ALL"}),
])
def test_keyword_tables_agree_with_tritons_enums(table, enum, names) -> None:
    values = getattr(ir, enum)
    assert set(table) == set(names)
    for word, member in names.items():
        member_value = getattr(values, member)  # pybind11 (3.6) or nanobind enum
        assert table[word] == int(getattr(member_value, "value", member_value)), (enum, word)


def test_keyword_attributes_of_printed_lines() -> None:
    # The printed forms of Triton 3.6 through 3.9 (custom syntax, unchanged across them).
    assert K.keyword_int_attrs("arith.cmpi", "%7 = arith.cmpi uge, %5, %6 : i32") == {
        "predicate": K.CMPI_PREDICATES["uge"]}
    assert K.keyword_int_attrs("tt.get_program_id", "%0 = tt.get_program_id z : i32") == {
        "axis": 2}
    assert K.keyword_int_attrs(
        "tt.atomic_rmw", "%4 = tt.atomic_rmw umax, acq_rel, gpu, %1, %2, %3 : (...) -> i32"
    ) == {"atomic_rmw_op": 8, "sem": 4, "scope": 1}
    assert K.keyword_int_attrs("tt.clampf", "%3 = tt.clampf %0, %1, %2, propagateNan = all "
                                            ": f32") == {"propagateNan": 0xFFFF}
    assert K.keyword_int_attrs("arith.addi", "%3 = arith.addi %0, %1 : i32") == {}


# -- tensor descriptors --------------------------------------------------------------------


def test_descriptor_flag_follows_the_dataclass_fields() -> None:
    @dataclasses.dataclass
    class Old:
        base: object
        padding: str = "zero"

    @dataclasses.dataclass
    class New(Old):
        round_f32_to_tf32: bool = False

    assert compat.descriptor_has_tf32_flag(Old) is False
    assert compat.descriptor_has_tf32_flag(New) is True


@triton.jit
def _descriptor_copy(in_desc, out_desc, BM: tl.constexpr, BN: tl.constexpr):
    out_desc.store([0, 0], in_desc.load([0, 0]))


def test_descriptor_argument_count_is_what_the_rewrite_makes() -> None:
    """The kernel arguments Triton's descriptor rewrite gives one descriptor are the ones the
    launcher sends (msltrans.runtime.descriptors), on this Triton."""
    from msltrans.ir import read_module
    from msltrans.runtime.descriptors import descriptor_types

    ty = "tensordesc<fp32[8, 16]>"
    mod = read_module(to_ttgir(_descriptor_copy, {"in_desc": ty, "out_desc": ty},
                               {"BM": 8, "BN": 16}))
    kernel = next(f for f in mod.functions if f.public)
    assert len(kernel.args) == 2 * len(descriptor_types(ty))


# -- block pointers and the JIT's registry -------------------------------------------------


def test_block_pointer_pass_is_added_exactly_where_triton_has_it() -> None:
    added: list = []
    with_pass = SimpleNamespace(add_rewrite_tensor_pointer=added.append)
    assert compat.add_block_pointer_rewrite("pm", with_pass) is True and added == ["pm"]
    assert compat.add_block_pointer_rewrite("pm", SimpleNamespace()) is False


@triton.jit
def _block_ptr_copy(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(y_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    for _ in range(2):
        tl.store(dst, tl.load(src, boundary_check=(0, 1)) + 1.0, boundary_check=(0, 1))
        src = tl.advance(src, (0, BN))
        dst = tl.advance(dst, (0, BN))


def test_block_pointers_run_on_this_triton() -> None:
    import numpy as np

    from tests.support.run_kernel import run_kernel

    m, n = 5, 12
    x = np.arange(m * n, dtype=np.float32).reshape(m, n)
    y = np.zeros_like(x)
    try:
        run_kernel(_block_ptr_copy, (1,), x, y, m, n, BM=8, BN=8)
    except CompilationError as err:
        if "Block pointers have been removed" not in str(err):
            raise
        pytest.skip("this Triton's front end has no block pointers (3.9 on)")
    # two 8-wide column blocks cover all 12 columns; the boundary check drops the rest
    assert y.tolist() == (x + 1.0).tolist()


def test_jit_functions_finds_this_modules_kernels() -> None:
    found = compat.jit_functions()
    assert any(f is _block_ptr_copy for f in found)
    assert all(isinstance(f, triton.runtime.jit.JITFunction) for f in found)
