"""Categorise the outcomes that `msltrans_conformance` recorded (one JSON row per test).

Categories:
- `pass`;
- `hardware` — Apple GPUs lack it: fp64, tf32, fp8/mxfp units, 64-bit atomics, more than 1024
  threads per threadgroup, more than 32 KB of threadgroup memory (a refusal or a skip naming it);
- `not-lowered` — a `MetalNonRecoverableError` naming an op msltrans does not lower yet (or
  a variant of an op it refuses), keyed by op;
- `backend-gated` — the upstream test skips itself for this backend (CUDA/HIP/XPU-only tests,
  tests for the interpreter, compile-only warm-up);
- `upstream-xfail` — the test's own xfail marker;
- `test-assumes` — the upstream test needs what a CPU-tensor backend without LLVM cannot give
  (an `llir`/`ptx` artifact, a CUDA/XPU torch build, pinned memory), or the installed Triton's
  front end rejects the tree's test kernel (version skew), or — listed by test id in
  ASSUMES_BY_ID, each with the script or test that shows it — the test's reference is further
  from the exact (float64) value than msltrans, or its tolerance is tighter than the order
  of accumulation;
- `sim-budget` — a listed test whose size alone runs past the time limit on the simulator
  (BUDGET_BY_ID), its kernel pinned at a size that fits by a named test of the project;
- `real` — wrong results, crashes, timeouts, other exceptions: a bug of msltrans (or of the
  simulator) until shown otherwise;
- `other-skip` — any other skip reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

HARDWARE_PATTERNS: tuple[tuple[str, str], ...] = (
    ("no fp64", r"fp64|float64|f64\b|double"),
    ("no tf32", r"tf32"),
    ("no fp8/mxfp unit", r"fp8|float8|e4m3|e5m2|mxfp|e2m1|fp4|scaled_dot|dot_scaled"),
    ("no 64-bit atomics", r"64-bit atomic"),
    ("> 1024 threads", r"threads per threadgroup|num_warps=\d+ gives|> ?1024 threads"),
    ("> 32 KB threadgroup memory", r"threadgroup memory|shared memory|out of resources"),
    ("no thread-block clusters", r"num_ctas|thread-block cluster"),
)
GATED_PATTERN = re.compile(
    r"cuda|hip|amd|nvidia|hopper|blackwell|ampere|sm\d|sm_\d|xpu|intel|interpreter|"
    r"compile[- ]only|warmup|ptx|cubin|amdgcn|gfx\d|rocm|mfma|wgmma|tma|not supported on this "
    r"(device|platform|backend|gpu)|only (supported|for|on)", re.IGNORECASE)
ASSUMES_PATTERNS: tuple[tuple[str, str], ...] = (
    ("asks for an LLVM/PTX artifact", r"Unknown key: '(llir|ptx|amdgcn|cubin|hsaco|spv)'"),
    ("needs a CUDA/XPU torch build", r"compiled without (XPU|CUDA)|not compiled with (CUDA|XPU)"),
    ("needs pinned memory (an accelerator)", r"pin_memory=True requires"),
    # Front-end errors raised before any backend code runs: the 3.8-era tree's test kernel does
    # something the installed Triton 3.9 front end rejects (tree/release skew).
    ("Triton 3.9 front end rejects the test kernel (tree/release skew)",
     r"too many indices for tensor of rank 0"),
    # scripts/conformance/inductor_shims.py: a name the PyTorch test tree imports that the
    # installed torch no longer has
    ("the PyTorch test tree calls a name the installed torch lacks (tree/release skew)",
     r"tree/release skew: the installed torch has no"),
)
# (label, test-id pattern, failure pattern): a wrong result shown not to be msltrans's — the
# tree's front end differing from the installed one (bit for bit against Triton's CUDA
# backend), or a reference that is further from float64 than msltrans.
ASSUMES_BY_ID: tuple[tuple[str, str, str], ...] = (
    # The tree's tl.cumsum/tl.cumprod promote bf16 to f32 before scanning; Triton 3.9.0's scan
    # bf16 in bf16, so the sums round at every step and miss rtol=0.01. On this exact kernel
    # and input msltrans returns the bits Triton's CUDA backend returns for a bf16 scan
    # (tests/e2e/test_scan_cuda_order.py::test_upstream_scan2d_bf16_matches_cuda).
    ("the tree's tl.cumsum/cumprod promote bf16 to f32, Triton 3.9.0's do not "
     "(tree/release skew; msltrans's bits equal CUDA's)",
     r"::test_scan2d\[(cumsum|cumprod)-bfloat16-", r"Not equal to tolerance"),
    # The test expects a CPU tensor to be refused (ValueError) as device memory. On the
    # simulator engine CPU tensors *are* the device memory; on the MPS engine a CPU tensor is
    # refused with MetalPointerDeviceError, a ValueError (tests/runtime/test_runtime_e2e.py).
    ("expects CPU tensors to be refused; on the simulator they are the device memory",
     r"::test_pointer_arguments\[cpu\]", r"DID NOT RAISE <class 'ValueError'>"),
    # Liger compares with torch on the same device, here the CPU. torch-CPU's bf16 layer_norm
    # backward (dW, dB) and fp32 cross-entropy with reduction="sum" are further from float64
    # than msltrans and miss the test's tolerance *against float64*; msltrans meets it
    # (scripts/conformance/liger_vs_float64.py prints both errors per case).
    ("the reference is torch-CPU's bf16 layer_norm backward, further from float64 than "
     "msltrans (liger_vs_float64.py)",
     r"test_layer_norm\.py::test_liger_layer_norm\[dtype1-", r"allclose"),
    ("the reference is torch-CPU's fp32 cross-entropy (sum), further from float64 than "
     "msltrans (liger_vs_float64.py)",
     r"test_cross_entropy\.py::test_correctness_(with_z_loss_with_other_params_once\[0\.2--42-"
     r"sum-(False-1e-05|True-0\.0001)-1\.0-dtype1-|not_last_layer_with_other_params\[1\.0-dtype1-"
     r"1e-08-1e-05-sum-(42-1e-05-0\.2-40\.0|-100-0\.0001-0\.1-30\.0)-)", r"allclose|[Mm]ismatch"),
    # torch-CPU's fp16 cross_entropy (mean) sums the 8192 row losses in fp16: about 89000 > 65504,
    # so its reference is inf; msltrans's 10.8828 is the float64 loss rounded to fp16.
    ("the reference is torch-CPU's fp16 cross-entropy (mean), which overflows to inf; msltrans "
     "gives the float64 loss rounded to fp16 (liger_vs_float64.py)",
     r"test_cross_entropy\.py::test_correctness_with_forward_only\[dtype1-1\.0-0\.01-0\.01-mean-"
     r"2-4096-", r"allclose.*\(tensor\(inf, dtype=torch\.float16\)"),
    # Two test_scaled_dot cases miss atol=1e-5 on one element each, in sums that cancel. The
    # reference is torch's CPU matmul; msltrans's value is within the fp32 accumulation bound of
    # the exact (float64) product and equals Triton CUDA's bits except where the order of
    # accumulation differs (tests/e2e/test_dot_scaled_cuda.py); CUDA lands inside 1e-5 by chance.
    ("the tolerance (atol 1e-5 on sums that cancel) is tighter than accumulation order; "
     "msltrans is within the fp32 bound of the exact product (test_dot_scaled_cuda.py)",
     r"::test_scaled_dot\[64-64-(128-False-False-True-e4m3-fp16|64-False-False-False-e4m3-"
     r"e4m3)-4-16-1\]$", r"not close"),
    # PyTorch's Inductor tests (scripts/run_inductor_tests.py): the stored test tree is older
    # than the installed torch 2.13; these fail identically with Inductor's own C++ backend
    # (CpuTests, cpu_backend="cpp", no msltrans involved).
    ("the tree's expected post-grad graph text predates torch 2.13 (fails the same with "
     "cpu_backend='cpp')", r"::test_remove_noop_slice_scatter_cpu$", r"AssertionError"),
    ("calls pad_mm.should_pad_bench, which torch 2.13 lacks (fails the same with "
     "cpu_backend='cpp')", r"::test_should_pad_bench_for_bmm_cpu$", r"should_pad_bench"),
    ("calls CompileId(999, 999), a signature torch 2.13 changed (fails the same with "
     "cpu_backend='cpp')", r"::test_deterministic_codegen_cpu$", r"CompileId\.__init__"),
)
# (what it runs, test-id pattern): timeouts that are the test's size, not a hang. Each names
# the project test that runs its kernel at a size that fits.
BUDGET_BY_ID: tuple[tuple[str, str], ...] = (
    ("1000 launches × 65536 programs × 1024 threads (about 4 h here); one launch of the same "
     "kernel: tests/e2e/test_upstream_regressions.py::test_load_store_same_ptr_one_launch",
     r"::test_load_store_same_ptr$"),
)
FRONTEND_REFUSAL = re.compile(r"The supported fp8 dtypes are \(|input_precision must be one of "
                              r"\('ieee',\)")
WRONG_RESULT = re.compile(r"AssertionError|Mismatch|Not equal|not close|assert ", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    category: str  # see the module docstring
    detail: str  # the reason bucket: hardware reason, op name, failure kind, skip reason


def _hardware(text: str) -> str | None:
    m = re.search(r"num_warps=(\d+) is not supported", text)
    if m and int(m.group(1)) > 32:
        return "> 1024 threads"
    for label, pat in HARDWARE_PATTERNS:
        if re.search(pat, text, re.IGNORECASE):
            return label
    return None


def _refusal_key(row: dict[str, Any]) -> str:
    ref = row.get("refusal") or {}
    op = ref.get("op")
    reason = (ref.get("reason") or "").strip()
    if not op:
        m = re.search(r"cannot lower `([^`]+)`", row.get("reason", ""))
        op = m.group(1) if m else None
    if op and reason == "no Metal lowering for this op":
        return op
    short = re.sub(r"\d+", "N", reason)[:90]
    return f"{op}: {short}" if op else short or row.get("reason", "")[:90]


def _failure_kind(row: dict[str, Any]) -> str:
    text = row.get("reason", "")
    if row["outcome"] == "timeout":
        return "timeout"
    if row["outcome"] == "crash" or "worker" in text and "crashed" in text:
        return "crash"
    if "TestTimeout" in text or "msl-timeout" in text:
        return "timeout"
    if WRONG_RESULT.search(text):
        return "wrong result"
    m = re.match(r"\s*([A-Za-z_][\w.]*(Error|Exception|Fault|Interrupt))", text)
    return f"exception: {m.group(1)}" if m else "exception"


def classify(row: dict[str, Any]) -> Verdict:
    outcome = row["outcome"]
    reason = row.get("reason", "")
    if outcome in ("pass", "xpass"):
        return Verdict("pass", outcome)
    if outcome == "fail" and "Unexpected success" in reason:  # a unittest expectedFailure
        return Verdict("pass", "xpass")
    if outcome == "xfail":
        if reason.startswith("refused:"):
            hw = _hardware(reason)
            return Verdict("hardware", hw) if hw else Verdict("not-lowered", _refusal_key(row))
        hw = _hardware(reason)  # e.g. "insufficient shared memory", "num_ctas > 1"
        return Verdict("hardware", hw) if hw else Verdict("upstream-xfail", reason[:120])
    if outcome == "skip":
        hw = _hardware(reason)
        if hw:
            return Verdict("hardware", hw)
        if GATED_PATTERN.search(reason):
            return Verdict("backend-gated", reason[:120])
        return Verdict("other-skip", reason[:120])
    if FRONTEND_REFUSAL.search(reason):  # rows recorded before the plugin converted these
        return Verdict("hardware", _hardware(reason) or "front-end refusal")
    for label, pat in ASSUMES_PATTERNS:
        if re.search(pat, reason):
            return Verdict("test-assumes", label)
    for label, id_pat, pat in ASSUMES_BY_ID:
        if re.search(id_pat, row.get("id", "")) and re.search(pat, reason):
            return Verdict("test-assumes", label)
    if _failure_kind(row) == "timeout":
        for label, id_pat in BUDGET_BY_ID:
            if re.search(id_pat, row.get("id", "")):
                return Verdict("sim-budget", label)
    return Verdict("real", _failure_kind(row))
