"""`msltrans selftest` on the simulator: every quick case passes against its float64 reference
and against the simulator bytes shipped in msltrans/selftest/reference.npz (so the bytes a
Mac is compared with are current), and the receipt says what ran where."""

from __future__ import annotations

import json

import numpy as np
import pytest

from msltrans import cli, msl_version
from msltrans.selftest import cases, compare, runner


@pytest.fixture(autouse=True)
def _simulator(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # noqa: ANN001
    monkeypatch.setenv("MSLTRANS_ENGINE", "sim")
    monkeypatch.delenv(msl_version.ENV, raising=False)


def test_quick_selftest_passes_and_writes_the_receipt(tmp_path, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "receipt.json"
    assert cli.main(["selftest", "--out", str(out)]) == 0
    receipt = json.loads(out.read_text())
    quick = [c.name for c in cases.CASES if not c.full_only]
    assert [c["name"] for c in receipt["cases"]] == quick
    assert receipt["summary"] == {"pass": len(quick), "fail": 0, "refused": 0, "error": 0}
    env = receipt["environment"]
    assert env["engine"] == "sim" and env["chip"] == "CPU Metal simulator"
    assert env["msl_version"] == "3.2" and env["triton"] and env["torch"] and env["msltrans"]
    for case in receipt["cases"]:
        for name, output in case["outputs"].items():
            assert output["vs_float64_reference"]["ok"], (case["name"], name)
            # the shipped simulator bytes are current: regenerate them with
            # `MSLTRANS_ENGINE=sim msltrans selftest --write-reference` after a codegen change
            assert output["vs_simulator"]["ok"] is True, (case["name"], name, output)
            if output["vs_simulator"]["exact_claimed"]:
                assert output["vs_simulator"]["bytes_equal"], (case["name"], name)
    assert "receipt:" in capsys.readouterr().out
    _emitted_metal_is_listed()


def _emitted_metal_is_listed() -> None:
    """Every Metal name in the MSL the self-test's kernels compiled to is in
    docs/msl-subset.md (msltrans/msl_subset.py)."""
    from triton.runtime.jit import JITFunction

    from msltrans import msl_subset
    from msltrans.selftest import kernels
    from tests.test_docs_msl_subset import metal_names_in

    sources = [k.asm["msl"] for fn in vars(kernels).values() if isinstance(fn, JITFunction)
               for cache in fn.device_caches.values() for k in cache[0].values()]
    assert len(sources) >= 10
    text = "\n".join(s.decode() if isinstance(s, bytes) else s for s in sources)
    unlisted = metal_names_in(text) - set(msl_subset.all_names())
    assert not unlisted, f"emitted but not in docs/msl-subset.md: {sorted(unlisted)}"


def test_a_difference_from_the_simulator_bytes_fails(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    reference = runner.load_reference()
    reference["vector_add/out"] = reference["vector_add/out"].copy()
    reference["vector_add/out"][7] ^= 1  # one ulp in one element
    monkeypatch.setattr(runner, "load_reference", lambda: reference)
    out = tmp_path / "r.json"
    assert cli.main(["selftest", "--case", "vector_add", "--out", str(out)]) == 1
    row = json.loads(out.read_text())["cases"][0]
    assert row["verdict"] == "fail"
    sim = row["outputs"]["out"]["vs_simulator"]
    assert sim["bytes_equal"] is False and sim["max_ulp"] == 1 and sim["exact_claimed"]


def test_fenced_case_is_refused_below_msl_3_2(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    from msltrans.selftest import kernels

    monkeypatch.setenv(msl_version.ENV, "3.1")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    # Triton keeps compiled kernels per process keyed by the launch's own options: the
    # target read from the environment is applied to a fresh compile.
    kernels.locked_counter.device_caches.clear()
    out = tmp_path / "r.json"
    assert cli.main(["selftest", "--case", "spin_lock_64", "--out", str(out)]) == 0
    row = json.loads(out.read_text())["cases"][0]
    assert row["verdict"] == "refused" and "needs MSL 3.2" in row["reason"]
    assert "macOS 15" in row["reason"]
    kernels.locked_counter.device_caches.clear()


def test_timing_compares_with_torch() -> None:
    calls = []
    case = cases.Case("t", "x", lambda ctx: [], timing=lambda ctx: (
        lambda: calls.append("ours"), lambda: calls.append("torch")))
    timing = runner._timing(case, "cpu", lambda: None)
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
