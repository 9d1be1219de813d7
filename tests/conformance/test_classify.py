"""The conformance classifier (scripts/conformance/classify.py) on recorded-row shapes; no
upstream tree needed."""

from __future__ import annotations

import pytest

from scripts.conformance.classify import classify

REFUSED = "refused: MetalNonRecoverableError: "
CE_SUM = ("the reference is torch-CPU's fp32 cross-entropy (sum), further from float64 than "
          "msltrans (liger_vs_float64.py)")
LN_BF16 = ("the reference is torch-CPU's bf16 layer_norm backward, further from float64 than "
           "msltrans (liger_vs_float64.py)")
CE_MEAN_INF = ("the reference is torch-CPU's fp16 cross-entropy (mean), which overflows to inf; "
               "msltrans gives the float64 loss rounded to fp16 (liger_vs_float64.py)")
CE_BF16 = ("the reference is torch-CPU's bf16 cross-entropy gradient, further from float64 "
           "than msltrans (liger_vs_float64.py)")
FORWARD_ONLY_ID = ("test/transformers/test_cross_entropy.py::test_correctness_with_forward_only["
                   "dtype1-1.0-0.01-0.01-mean-2-4096-32000--100]")


def _fp16_allclose_failure(reference: str, ours: str) -> str:
    """pytest's line for `assert torch.allclose(reference, ours)` on two fp16 scalars."""
    return ("assert False\n +  where False = <built-in method allclose of type object at 0x7f>("
            f"tensor({reference}, dtype=torch.float16), tensor({ours}, dtype=torch.float16), "
            "atol=0.01)")


@pytest.mark.parametrize("row,category,detail", [
    ({"outcome": "pass"}, "pass", "pass"),
    ({"outcome": "xfail", "reason": REFUSED + "at t.py:1: fp64 is not available on Apple GPUs"},
     "hardware", "no fp64"),
    ({"outcome": "xfail", "reason": REFUSED + "cannot lower `tt.atomic_rmw`: 64-bit atomic on i64",
      "refusal": {"op": "tt.atomic_rmw", "reason": "64-bit atomic on i64"}},
     "hardware", "no 64-bit atomics"),
    ({"outcome": "xfail", "reason": REFUSED + "cannot lower `tt.atomic_rmw`: 64-bit atomic `add` "
      "whose old value is used: Metal has no 64-bit fetch-and-modify"},
     "hardware", "no 64-bit atomic that returns the old value"),
    ({"outcome": "xfail", "reason": REFUSED + "64-bit atomic signed max: Metal's only 64-bit "
      "atomics, atomic_ulong max/min (MSL 6.15.4.6), compare unsigned"},
     "hardware", "no signed 64-bit atomic max/min"),
    ({"outcome": "xfail", "reason": REFUSED + "64-bit atomic compare-and-swap: Metal has no "
      "64-bit compare-exchange"}, "hardware", "no 64-bit atomic exchange/compare-and-swap"),
    ({"outcome": "xfail", "reason": REFUSED + "num_warps=64 is not supported"},
     "hardware", "> 1024 threads"),
    ({"outcome": "xfail", "reason": REFUSED + "cannot lower `tt.gather` at t.py:3: no Metal "
      "lowering for this op", "refusal": {"op": "tt.gather",
                                          "reason": "no Metal lowering for this op"}},
     "not-lowered", "tt.gather"),
    ({"outcome": "fail", "reason": "CompilationError: type fp8e5 not supported in this "
      "architecture. The supported fp8 dtypes are ()"}, "hardware", "no fp8/mxfp unit"),
    ({"outcome": "skip", "reason": "Only for cuda"}, "backend-gated", "Only for cuda"),
    ({"outcome": "fail", "reason": "KeyError: \"Unknown key: 'llir'\""}, "test-assumes",
     "asks for an LLVM/PTX artifact"),
    ({"outcome": "fail", "reason": "AssertionError: Tensor-likes are not equal!"}, "real",
     "wrong result"),
    ({"outcome": "fail", "id": "t/test_core.py::test_scan2d[cumsum-bfloat16-shape378-1-False-4]",
      "reason": "AssertionError: \nNot equal to tolerance rtol=0.01, atol=0"}, "test-assumes",
     "the tree's tl.cumsum/cumprod promote bf16 to f32, Triton 3.9.0's do not "
     "(tree/release skew; msltrans's bits equal CUDA's)"),
    # the same failure on any other dtype is ours
    ({"outcome": "fail", "id": "t/test_core.py::test_scan2d[cumsum-float16-shape378-1-False-4]",
      "reason": "AssertionError: \nNot equal to tolerance rtol=0.01, atol=0"}, "real",
     "wrong result"),
    ({"outcome": "fail", "id": "t/test_core.py::test_pointer_arguments[cpu]",
      "reason": "Failed: DID NOT RAISE <class 'ValueError'>"}, "test-assumes",
     "expects CPU tensors to be refused; on the simulator they are the device memory"),
    ({"outcome": "timeout", "reason": "TestTimeout"}, "real", "timeout"),
    ({"outcome": "timeout", "id": "t/test_core.py::test_load_store_same_ptr",
      "reason": "TestTimeout: the worker was ended by the hard timeout"}, "sim-budget",
     "1000 launches × 65536 programs × 1024 threads (about 4 h here); one launch of the same "
     "kernel: tests/e2e/test_upstream_regressions.py::test_load_store_same_ptr_one_launch"),
    # any other test that times out is a real failure until shown otherwise
    ({"outcome": "timeout", "id": "t/test_core.py::test_load_store_same_ptr_2",
      "reason": "TestTimeout"}, "real", "timeout"),
    ({"outcome": "crash", "reason": "worker 'gw0' crashed while running 'x'"}, "real", "crash"),
    ({"outcome": "skip", "reason": "bfloat16 not supported on this GPU"}, "backend-gated",
     "bfloat16 not supported on this GPU"),
    ({"outcome": "fail", "id": "test/transformers/test_layer_norm.py::test_liger_layer_norm["
      "dtype1-0.02-0.02-2-8-64]", "reason": "assert False + where False = allclose(...)"},
     "test-assumes", LN_BF16),
    # the same assertion failing in fp32 (dtype0) is ours
    ({"outcome": "fail", "id": "test/transformers/test_layer_norm.py::test_liger_layer_norm["
      "dtype0-1e-05-1e-05-2-8-64]", "reason": "assert False + where False = allclose(...)"},
     "real", "wrong result"),
    ({"outcome": "fail", "id": "test/transformers/test_cross_entropy.py::test_correctness_with_"
      "z_loss_with_other_params_once[0.2--42-sum-False-1e-05-1.0-dtype1-1e-08-1e-06-3-423-32000]",
      "reason": "AssertionError: Number of mismatched elements: 3894"}, "test-assumes",
     CE_SUM),
    # reduction="mean" was not shown to be torch's error
    ({"outcome": "fail", "id": "test/transformers/test_cross_entropy.py::test_correctness_with_"
      "z_loss_with_other_params_once[0.1-42-mean-False-1e-05-1.0-dtype1-1e-08-1e-06-3-423-32000]",
      "reason": "AssertionError: Number of mismatched elements: 3894"}, "real", "wrong result"),
    ({"outcome": "fail", "id": "test/transformers/test_cross_entropy.py::test_correctness_not_"
      "last_layer_with_other_params[1.0-dtype1-1e-08-1e-05-sum--100-0.0001-0.1-30.0-2-1024-32000]",
      "reason": "assert False + where False = allclose(...)"}, "test-assumes",
     CE_SUM),
    # the same case with reduction="mean" was not diagnosed
    ({"outcome": "fail", "id": "test/transformers/test_cross_entropy.py::test_correctness_not_"
      "last_layer_with_other_params[1.0-dtype1-1e-08-1e-05-mean--100-0.0001-0.1-30.0-2-1024-"
      "32000]", "reason": "assert False + where False = allclose(...)"}, "real", "wrong result"),
    ({"outcome": "fail", "id": FORWARD_ONLY_ID,
      "reason": _fp16_allclose_failure("inf", "10.8828")}, "test-assumes", CE_MEAN_INF),
    *[({"outcome": "fail", "id": f"test/transformers/test_cross_entropy.py::{case}",
        "reason": "assert False + where False = allclose(...)"}, "test-assumes", CE_BF16)
      for case in ("test_correctness[1.0-dtype0-1e-08-0.05-sum-3-423-32000]",
                   "test_correctness[1.0-dtype0-1e-08-0.05-none-2-4096-32000]",
                   "test_correctness_with_ignore_index[1.0-dtype0-1e-08-0.05-sum-2-4096-32000-2]",
                   "test_correctness_with_ignore_index[1.0-dtype0-1e-08-0.05-none-3-423-32000"
                   "--123]",
                   "test_correctness_with_weight_once[1.0-dtype0-1e-08-0.05-none-3-423-32000]",
                   "test_correctness_not_last_layer[1.0-dtype0-1e-08-0.05-sum-2-4096-32000]")],
    # the same tests with reduction="mean" (and not_last_layer with "none", or fp32) were not
    # shown to be torch's error
    *[({"outcome": "fail", "id": f"test/transformers/test_cross_entropy.py::{case}",
        "reason": "assert False + where False = allclose(...)"}, "real", "wrong result")
      for case in ("test_correctness[1.0-dtype0-1e-08-0.05-mean-3-423-32000]",
                   "test_correctness_with_weight_once[1.0-dtype0-1e-08-0.05-mean-2-4096-32000]",
                   "test_correctness_not_last_layer[1.0-dtype0-1e-08-0.05-none-3-423-32000]",
                   "test_correctness_with_weight_once[1.0-dtype1-1e-08-1e-06-sum-3-423-32000]")],
    ({"outcome": "fail", "id": "test/transformers/test_geglu.py::test_correctness[dtype1-0.01-"
      "0.01-2-2048-2048-4096]", "reason": "assert False is True + where False = allclose(...)"},
     "test-assumes", "the reference is torch-CPU's bf16 gelu_tanh backward, further from "
     "float64 than msltrans; end to end both bf16 pipelines are as far from float64 "
     "(liger_vs_float64.py)"),
    # msltrans returning inf there (the second argument) stays ours
    ({"outcome": "fail", "id": FORWARD_ONLY_ID,
      "reason": _fp16_allclose_failure("10.8828", "inf")}, "real", "wrong result"),
    ({"outcome": "fail", "id": "python/test/unit/language/test_core.py::test_scaled_dot[64-64-64-"
      "False-False-False-e4m3-e4m3-4-16-1]", "reason": "AssertionError: Tensor-likes are not "
      "close! Mismatched elements: 1 / 4096 (0.0%)"}, "test-assumes",
     "the tolerance (atol 1e-5 on sums that cancel) is tighter than accumulation order; "
     "msltrans is within the fp32 bound of the exact product (test_dot_scaled_cuda.py)"),
    # any other test_scaled_dot case is not covered by that evidence
    ({"outcome": "fail", "id": "python/test/unit/language/test_core.py::test_scaled_dot[64-64-64-"
      "False-False-False-e4m3-e5m2-4-16-1]", "reason": "AssertionError: Tensor-likes are not "
      "close! Mismatched elements: 1 / 4096 (0.0%)"}, "real", "wrong result"),
    ({"outcome": "fail", "id": "u/runtime/test_subproc.py::test_replenishing_process_pool_"
      "reuses_clean_processes", "reason": "ConnectionResetError: [Errno 104] Connection reset"},
     "test-assumes", "needs a CUDA torch build (the test's process-pool workers call "
     "torch.cuda.synchronize())"),
    ({"outcome": "fail", "id": "u/language/test_annotations.py::test_int_annotation[True-8]",
      "reason": "msltrans.sim.errors.OutOfBoundsError: out-of-bounds write of buffer 0 (`X`, "
      "4 bytes) at byte offset 12"}, "test-assumes",
     "writes past the end of its one-element tensor (X + 3); in bounds the kernel passes "
     "(test_upstream_assumptions.py)"),
    # an out-of-bounds write of another test, or of another buffer, stays ours
    ({"outcome": "fail", "id": "u/language/test_annotations.py::test_int_annotation[True-8]",
      "reason": "msltrans.sim.errors.OutOfBoundsError: out-of-bounds write of buffer 1 (`Y`, "
      "4 bytes) at byte offset 12"}, "real", "exception: msltrans.sim.errors.OutOfBoundsError"),
    ({"outcome": "timeout", "id": "u/language/test_conversions.py::test_typeconvert_downcast["
      "float32-float16-rtne-1199562752]", "reason": "TestTimeout"}, "sim-budget",
     "every source bit pattern: 256 launches × 2^24 values per conversion (hours here); the "
     "same conversions bit for bit against Triton CUDA: tests/e2e/test_fp8.py (to fp8) and "
     "test_diff_cast.py::test_downcast_rounding_like_cuda (to fp16/bf16, rtne and rtz)"),
    # a wrong conversion (not a timeout) is ours
    ({"outcome": "fail", "id": "u/language/test_conversions.py::test_typeconvert_downcast["
      "float32-float16-rtne-1199562752]", "reason": "ValueError: 3 elements mismatch"},
     "real", "wrong result"),
])
def test_classify(row: dict, category: str, detail: str) -> None:
    v = classify(row)
    assert (v.category, v.detail) == (category, detail)
