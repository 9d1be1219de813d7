"""`msltrans selftest` on the simulator: every quick case passes against its float64 reference
and against the simulator bytes shipped in msltrans/selftest/reference.npz (so the bytes a
Mac is compared with are current); the receipt says what ran where; no case is claimed exact
while its kernels emit an approximate function; a case that raises, crashes or hangs still
leaves a receipt naming it."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from msltrans import cli, msl_version
from msltrans.errors import MetalNonRecoverableError
from msltrans.selftest import accuracy, cases, cases_probe, checks, compare, runner
from msltrans.selftest.context import Context, Skip

# Approximate functions as the lowering writes them into a kernel's body: any fast::,
# the precise:: transcendentals (MSL Table 8.1 rows above 0 ulp), simdgroup matrix products.
APPROX_IN_BODY = re.compile(
    r"\bfast::\w+|\bprecise::(?:exp2?|exp10|log(?:2|10)?|sin|cos|tan|tanh|sinh|cosh|a?sinh?|"
    r"acosh?|atanh?|atan2?|pow|powr|cbrt)\b|\bsimdgroup_multiply_accumulate\b")


@pytest.fixture(autouse=True)
def _simulator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MSLTRANS_ENGINE", "sim")
    monkeypatch.delenv(msl_version.ENV, raising=False)
    monkeypatch.delenv(checks.FAST_MATH_ENV, raising=False)


def _sim_refuses_non_ascii() -> bool:
    """Whether this simulator has issue 34's ASCII check (decided here, not by the case)."""
    from msltrans import sim

    try:
        sim.compile_shader("// \u00b1\nkernel void k(device int *x [[buffer(0)]]) { x[0] = 1; }")
    except sim.CompileError as exc:
        return str(exc).startswith("non-ASCII")
    return False


def _expected_skips() -> set[str]:
    from msltrans.sim import errors

    skips = set()
    if not hasattr(errors, "CoherenceError"):
        skips |= {"coherence_plain", "coherence_device"}
    if not _sim_refuses_non_ascii():
        skips.add("non_ascii_rejected")
    return skips


def test_quick_selftest_passes_and_writes_the_receipt(tmp_path, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "receipt.json"
    t0 = time.monotonic()
    assert cli.main(["selftest", "--out", str(out)]) == 0
    seconds = time.monotonic() - t0
    receipt = json.loads(out.read_text())
    quick = [c.name for c in runner.select(False, None)]
    assert [c["name"] for c in receipt["cases"]] == quick
    skips = _expected_skips()
    assert {c["name"] for c in receipt["cases"] if c["verdict"] == "skip"} == skips
    assert receipt["summary"] == {**dict.fromkeys(runner.VERDICTS, 0),
                                  "pass": len(quick) - len(skips), "skip": len(skips)}
    assert receipt["complete"] is True and receipt["running"] is None
    env = receipt["environment"]
    assert env["engine"] == "sim" and env["chip"] == "CPU Metal simulator"
    assert env["msl_version"] == "3.2" and env["triton"] and env["torch"] and env["msltrans"]
    assert env["math_mode_env"] == {checks.FAST_MATH_ENV: None}
    rows = {c["name"]: c for c in receipt["cases"]}
    by_name = {c.name: c for c in runner.all_cases()}
    for case in receipt["cases"]:
        if case["verdict"] == "skip":
            assert case["reason"]
            continue
        assert case["accuracy"]["math_mode"] == "safe"
        for name, output in case["outputs"].items():
            assert output["vs_float64_reference"]["ok"], (case["name"], name)
            sim = output["vs_simulator"]
            if by_name[case["name"]].sim_bytes:
                # the shipped simulator bytes are current: regenerate them with
                # `MSLTRANS_ENGINE=sim msltrans selftest --write-reference` after a change.
                # Bytes must match where exactness is claimed; elsewhere (the histogram's float
                # sums: atomics whose order depends on the simulator's worker threads and on
                # the Triton version's TTGIR) the bound must hold.
                assert sim["ok"] is True, (case["name"], name, output)
                if sim["exact_claimed"]:
                    assert sim["bytes_equal"], (case["name"], name, output)
    # what the probes measure on the simulator
    props = {n: rows[n].get("properties", {}) for n in rows}
    assert props["msl_version"] == {"metal_version": 320, "msltrans_predicted": 320}
    assert props["mma_fp32_order"]["mma_fp32_order"] == "in_order_fma_chain"
    for dtype in ("float32", "float16", "bfloat16"):
        short = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}[dtype]
        got = props[f"subnormals_{short}"][f"{dtype}_subnormals"]
        assert got["flushed"] == got["wrong"] == 0 and got["subnormal_results_kept"] >= 7
    assert props["math_mode"]["effective"] == "safe"
    if "coherence_plain" not in skips:
        assert props["coherence_plain"]["simulator_reported"]
    assert "receipt:" in capsys.readouterr().out
    print(f"quick selftest: {seconds:.1f} s")


@pytest.fixture(scope="module")
def ran_in_process() -> Iterator[list[tuple[cases.Case, list[cases.Output], Context]]]:
    """Every quick case run in this process (the kernels are cached): outputs and MSL."""
    before = os.environ.get("MSLTRANS_ENGINE")
    os.environ["MSLTRANS_ENGINE"] = "sim"
    done = []
    for case in runner.select(False, None):
        ctx = Context(case.name, "cpu", False, "sim")
        try:
            outputs = case.fn(ctx)
        except (Skip, MetalNonRecoverableError, AssertionError):
            outputs = []
        done.append((case, outputs, ctx))
    yield done
    if before is None:
        os.environ.pop("MSLTRANS_ENGINE", None)
    else:
        os.environ["MSLTRANS_ENGINE"] = before


def test_emitted_metal_is_listed(ran_in_process) -> None:  # noqa: ANN001
    """Every Metal name in the MSL the self-test's kernels compiled to is in
    docs/msl-subset.md (msltrans/msl_subset.py)."""
    from msltrans import msl_subset
    from tests.test_docs_msl_subset import metal_names_in

    sources = [s for _, _, ctx in ran_in_process for s in ctx.sources
               if s not in ctx.handwritten]
    assert len(sources) >= 10
    unlisted = metal_names_in("\n".join(sources)) - set(msl_subset.all_names())
    assert not unlisted, f"emitted but not in docs/msl-subset.md: {sorted(unlisted)}"


def _kernel_bodies(msl: str) -> str:
    """From each `kernel void` to the end of its body (braces counted)."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", msl, flags=re.S)
    bodies = []
    for m in re.finditer(r"\bkernel\s+void\b", text):
        start = text.index("{", m.end())
        depth, i = 0, start
        while True:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
            if depth == 0:
                break
        bodies.append(text[start:i])
    return "\n".join(bodies)


def test_no_output_is_claimed_exact_while_its_kernels_emit_an_approximate_op(
        ran_in_process) -> None:  # noqa: ANN001
    seen_approx = set()
    for case, outputs, ctx in ran_in_process:
        approx = {m for s in ctx.sources for m in APPROX_IN_BODY.findall(_kernel_bodies(s))}
        mode = accuracy.math_mode(False, 320, ctx.sources)
        _, problems, exact = checks.claims(outputs, ctx.sources, mode)
        assert not problems, (case.name, problems)
        for out in outputs:
            if approx:
                seen_approx.add(case.name)
                assert not exact[out.name], (case.name, out.name, approx)
    # the scan sees what the issue names: layer_norm's fast::divide/sqrt, dropout's divide
    assert {"layer_norm", "dropout", "softmax", "matmul_fp32_ieee"} <= seen_approx


def test_a_claim_the_msl_contradicts_is_an_error() -> None:
    """A case that claims layer_norm exact, or dropout within 2 ulp of the simulator, is
    reported as an error naming the function and the table."""
    def exact_claim(ctx: Any) -> list[cases.Output]:
        outs = cases._dropout(ctx)
        outs[0].exact = True
        return outs

    def tight_claim(ctx: Any) -> list[cases.Output]:
        outs = cases._dropout(ctx)
        outs[0].ulp = 2
        return outs

    reference = runner.load_reference()
    for fn, words in ((exact_claim, "claimed exact but its kernels emit fast::divide"),
                      (tight_claim, "below the specification's 2.5")):
        case = cases.Case("dropout", "tutorial", fn)
        row = checks.run_case(case, "cpu", False, reference, None, "sim")
        assert row["verdict"] == "error" and words in row["reason"], row


def test_scan_follows_calls_and_ignores_comments() -> None:
    msl = """
    // fast::divide in a comment
    inline float unused(float x) { return precise::exp(x); }
    inline float used(float x) { return precise::log(x) + fast::divide(x, 3.0f); }
    template <> inline float helper<float>(float a) { return used(a); }
    kernel void k(device float *x [[buffer(0)]]) { x[0] = helper<float>(x[0]); }
    """
    calls = {u.call: u for u in accuracy.scan(msl)}
    assert set(calls) == {"precise::log", "fast::divide"}
    assert calls["fast::divide"].bound.ulp == 2.5 and calls["fast::divide"].bound.table == "8.2"
    assert calls["precise::log"].bound.ulp == 4.0 and calls["precise::log"].bound.table == "8.1"
    assert accuracy.approximate("kernel void k() { float y = precise::sqrt(2.0f); }") == []


def test_fast_math_voids_the_exact_claims(monkeypatch) -> None:  # noqa: ANN001
    src = "kernel void k() {}"
    pragma = "#if __METAL_VERSION__ >= 320\n#pragma METAL fp math_mode(safe)\n#endif\n" + src
    assert accuracy.math_mode(True, 310, [pragma]) == "fast"
    assert accuracy.math_mode(True, 320, [src]) == "fast"
    assert accuracy.math_mode(True, 320, [pragma]) == "safe"
    assert accuracy.math_mode(False, 310, [src]) == "safe"
    monkeypatch.setenv(checks.FAST_MATH_ENV, "1")
    monkeypatch.setenv(msl_version.ENV, "3.1")
    case = next(c for c in cases.CASES if c.name == "vector_add")
    row = checks.run_case(case, "cpu", False, runner.load_reference(), None, "sim")
    assert row["accuracy"]["math_mode"] == "fast" and "void" in row["accuracy"]
    out = row["outputs"]["out"]
    assert out["vs_simulator"]["exact_claimed"] is False and out["vs_simulator"]["ok"] is None
    assert out["vs_float64_reference"]["ok"] is None
    assert out["vs_float64_reference"]["ok_in_safe_mode"] is True


def test_mma_probe_tells_the_orders_apart() -> None:
    """Each model of the fp32 product's order predicts different bits on the probe's
    diagonal, so the measured bits name at most one."""
    predicted = cases_probe.order_predictions(*cases_probe.mma_probe_inputs())
    signatures = [tuple(v) for v in predicted.values()]
    assert len(set(signatures)) == len(signatures), predicted
    assert predicted["in_order_fma_chain"] == [1.0, 1.0, 1 + 2**-11 + 2**-23, 1.0]


def _pid(ctx: Any) -> list[cases.Output]:
    ctx.properties["pid"] = os.getpid()
    return []


HARNESS = [
    cases.Case("harness_pid", "harness", _pid),
    cases.Case("harness_pid_after", "harness", _pid),
    cases.Case("harness_raise", "harness", lambda ctx: 1 / 0),
    cases.Case("harness_abort", "harness", lambda ctx: os.abort()),
    cases.Case("harness_abort_answers", "harness", lambda ctx: os.abort(),
               crash_passes="the probe's answer"),
    cases.Case("harness_hang", "harness", lambda ctx: time.sleep(600), timeout_s=2),
]


def test_a_raising_crashing_or_hanging_case_still_leaves_a_receipt(tmp_path) -> None:  # noqa: ANN001
    out = tmp_path / "r.json"
    names = ["harness_pid", "harness_raise", "harness_pid_after", "harness_abort",
             "harness_abort_answers", "harness_hang", "vector_add"]
    receipt = runner.run(only=names, out=out, extra="tests.test_selftest:HARNESS")
    on_disk = json.loads(out.read_text())
    assert on_disk == json.loads(json.dumps(receipt, default=str))
    rows = {r["name"]: r for r in on_disk["cases"]}
    assert [r["name"] for r in on_disk["cases"]] == names
    first, after = (rows[n]["properties"]["pid"] for n in ("harness_pid", "harness_pid_after"))
    assert first != os.getpid()  # not this process
    assert after != first  # after an error a fresh worker runs the rest (the GPU may be broken)
    assert rows["harness_raise"]["verdict"] == "error"
    assert "ZeroDivisionError" in rows["harness_raise"]["reason"]
    assert rows["harness_abort"]["verdict"] == "crash"
    assert "SIGABRT" in rows["harness_abort"]["reason"]
    answered = rows["harness_abort_answers"]  # a probe whose crash is its answer
    assert answered["verdict"] == "pass" and "SIGABRT" in answered["properties"]["crashed"]
    assert rows["harness_hang"]["verdict"] == "timeout"
    assert rows["vector_add"]["verdict"] == "pass"  # a fresh worker ran the rest
    assert on_disk["complete"] is True
    assert not list(tmp_path.glob("*.tmp"))  # written by rename, no temporary left


def test_the_receipt_names_the_case_in_flight(tmp_path) -> None:  # noqa: ANN001
    """Written before a case runs: a run killed during a case leaves its name."""
    out = tmp_path / "r.json"
    seen = []
    original = runner.save

    def spy(receipt: dict[str, Any], path: Any) -> None:
        original(receipt, path)
        seen.append(json.loads(path.read_text())["running"])

    runner.save = spy  # type: ignore[assignment]
    try:
        runner.run(only=["vector_add"], out=out, isolate=False)
    finally:
        runner.save = original  # type: ignore[assignment]
    assert "vector_add" in seen and seen[-1] is None


def test_an_exception_in_environment_loses_no_result(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    def broken(engine: str) -> dict[str, Any]:
        raise RuntimeError("no chip name")

    monkeypatch.setattr(runner, "environment", broken)
    out = tmp_path / "r.json"
    receipt = runner.run(only=["vector_add"], out=out, isolate=False)
    assert "RuntimeError: no chip name" in receipt["environment"]["error"]
    assert receipt["cases"][0]["verdict"] == "pass"
    assert json.loads(out.read_text())["summary"]["pass"] == 1


def test_a_difference_from_the_simulator_bytes_fails(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    reference = runner.load_reference()
    reference["vector_add/out"] = reference["vector_add/out"].copy()
    reference["vector_add/out"][7] ^= 1  # one ulp in one element
    monkeypatch.setattr(runner, "load_reference", lambda: reference)
    out = tmp_path / "r.json"
    assert cli.main(["selftest", "--case", "vector_add", "--in-process", "--out",
                     str(out)]) == 1
    row = json.loads(out.read_text())["cases"][0]
    assert row["verdict"] == "fail"
    sim = row["outputs"]["out"]["vs_simulator"]
    assert sim["bytes_equal"] is False and sim["max_ulp"] == 1 and sim["exact_claimed"]


def test_fenced_case_is_refused_below_msl_3_2(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    monkeypatch.setenv(msl_version.ENV, "3.1")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r.json"
    assert cli.main(["selftest", "--case", "spin_lock_64", "--case", "coherence_device",
                     "--out", str(out)]) == 0
    for row in json.loads(out.read_text())["cases"]:
        assert row["verdict"] == "refused" and "needs MSL 3.2" in row["reason"], row
        assert "macOS 15" in row["reason"]


def test_timing_compares_with_torch() -> None:
    calls = []
    case = cases.Case("t", "x", lambda ctx: [], timing=lambda ctx: (
        lambda: calls.append("ours"), lambda: calls.append("torch")))
    timing = checks.time_case(case, "cpu", lambda: None)
    assert set(timing) == {"msltrans_s", "torch_s", "torch_over_msltrans"}
    assert calls.count("ours") == calls.count("torch") == 21  # warm-up + 20 timed


def test_ulp_distance() -> None:
    a = np.array([1.0, -0.0, 0.0, np.nan, 2.0], np.float32).view(np.uint32)
    b = np.array([1.0, 0.0, 0.0, np.nan, np.nextafter(np.float32(2), np.float32(3))],
                 np.float32).view(np.uint32)
    assert compare.max_ulp(a, b, "float32") == 1  # -0/+0 adjacent, NaN = NaN, one step
    c = b.copy()
    c[0] = np.float32(np.nan).view(np.uint32)
    assert compare.max_ulp(a, c, "float32") == float("inf")


def test_philox_reference_matches_triton_rand() -> None:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def rand_kernel(out, seed, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out + offs, tl.rand(seed, offs))

    out = torch.empty(256)
    rand_kernel[(1,)](out, 2**33 + 7, BLOCK=256)
    want = cases.philox_uniform(2**33 + 7, np.arange(256))
    assert out.numpy().tobytes() == want.tobytes()
