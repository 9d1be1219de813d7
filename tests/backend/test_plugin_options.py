"""MetalOptions accept what Triton injects and users pass; bad values are refused."""

from __future__ import annotations

import warnings

import pytest
from triton.backends.compiler import GPUTarget

from msltrans import options as options_mod
from msltrans.backend.compiler import MetalBackend
from msltrans.errors import MetalNonRecoverableError
from msltrans.options import MetalOptions

BACKEND = MetalBackend(GPUTarget("metal", "apple-m1", 32))

INJECTED = {  # what JITFunction.run and user launch kwargs put into parse_options
    "debug": False, "instrumentation_mode": "", "fpsan_homomorphic_casts": False,
    "num_warps": 8, "num_ctas": 1, "enable_fp_fusion": False,
    "launch_cooperative_grid": False, "launch_pdl": True, "extern_libs": {"libdevice": "/x.bc"},
    "sanitize_overflow": True, "maxnreg": 128, "matrix_instr_nonkdim": 16, "kpack": 2,
    "waves_per_eu": 2, "ptx_options": "-v", "schedule_hint": "none", "min_shared_mem": 0,
}


def test_accepts_injected_and_vendor_kwargs():
    opt = BACKEND.parse_options(dict(INJECTED))
    assert opt.num_warps == 8 and opt.enable_fp_fusion is False and opt.maxnreg == 128
    assert opt.arch == "apple-m1"
    assert opt.extern_libs == (("libdevice", "/x.bc"),)
    assert opt.allowed_dot_input_precisions == ("ieee",)
    assert opt.default_dot_input_precision == "ieee"
    assert opt.supported_fp8_dtypes == ("fp8e4nv", "fp8e5")


def test_round_trip_through_dict_is_stable():
    # compile() re-parses options.__dict__; the result must equal and hash the same.
    opt = BACKEND.parse_options(dict(INJECTED))
    again = BACKEND.parse_options(dict(opt.__dict__))
    assert again == opt and again.hash() == opt.hash()


def test_hash_changes_with_fields():
    a = BACKEND.parse_options({"num_warps": 4, "enable_fp_fusion": True})
    b = BACKEND.parse_options({"num_warps": 4, "enable_fp_fusion": False})
    c = BACKEND.parse_options({"num_warps": 8, "enable_fp_fusion": True})
    assert len({a.hash(), b.hash(), c.hash()}) == 3
    assert a.hash() == BACKEND.parse_options({"num_warps": 4, "enable_fp_fusion": True}).hash()


@pytest.mark.parametrize("nw", [0, 3, 6, 64, -2])
def test_num_warps_must_be_power_of_two_up_to_32(nw):
    with pytest.raises(MetalNonRecoverableError, match="num_warps"):
        MetalOptions(num_warps=nw)


@pytest.mark.parametrize("nw", [1, 2, 4, 8, 16, 32])
def test_num_warps_accepted(nw):
    assert MetalOptions(num_warps=nw).num_warps == nw


@pytest.mark.parametrize("kwargs, match", [
    ({"num_ctas": 2}, "num_ctas"),
    ({"launch_cooperative_grid": True}, "cooperative"),
    ({"instrumentation_mode": "consan"}, "instrumentation_mode"),
    ({"allowed_dot_input_precisions": ("ieee", "tf32")}, "tf32"),
    ({"default_dot_input_precision": "tf32"}, "tf32"),
])
def test_unsupported_options_refused(kwargs, match):
    with pytest.raises(MetalNonRecoverableError, match=match):
        MetalOptions(**kwargs)


def test_num_stages_warns_once_per_process(monkeypatch):
    monkeypatch.setattr(options_mod, "_num_stages_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        MetalOptions(num_stages=2)
        MetalOptions(num_stages=4)
        MetalOptions(num_stages=3)
    msgs = [w for w in caught if "num_stages" in str(w.message)]
    assert len(msgs) == 1


def test_codegen_implementation_has_min_dot_size():
    fns = BACKEND.get_codegen_implementation(MetalOptions())
    assert fns["min_dot_size"](None, None) == (1, 1, 1)
    # tl.extra.libdevice resolves to CUDA's libdevice (ops_libdevice lowers its __nv_* calls)
    from triton.language.extra.cuda import libdevice

    assert BACKEND.get_module_map() == {"triton.language.extra.libdevice": libdevice}


def test_store_binary_only_is_refused(monkeypatch):
    monkeypatch.setenv("TRITON_STORE_BINARY_ONLY", "1")
    with pytest.raises(MetalNonRecoverableError, match="TRITON_STORE_BINARY_ONLY"):
        BACKEND.parse_options({})


@pytest.mark.parametrize("fusion", [True, False])
def test_fp_fusion_reaches_a_lowering_that_accepts_it(monkeypatch, fusion):
    import msltrans.ir
    import msltrans.lower
    from msltrans.backend.compiler import lower_ttgir

    seen = {}

    def lower_module(module, kernel=None, *, enable_fp_fusion=True, dot_fragments=None):
        seen["module"], seen["fusion"] = module, enable_fp_fusion
        seen["fragments"] = dot_fragments
        return "program"

    monkeypatch.setattr(msltrans.ir, "read_module", lambda mod: ("read", mod))
    monkeypatch.setattr(msltrans.lower, "lower_module", lower_module)
    opt = BACKEND.parse_options({"enable_fp_fusion": fusion})
    assert lower_ttgir("ttgir", opt) == "program"
    assert seen == {"module": ("read", "ttgir"), "fusion": fusion,
                    "fragments": opt.dot_fragments}
