"""The static codegen measures (benchmarks/codegen_stats.py, table 1) against the committed
baseline: a change that scalarises an access, leaves a register array in memory, adds a
barrier to a hot loop or grows threadgroup memory fails here. After an intended change,
re-record with `python -m benchmarks.codegen_stats --write-baseline` (and say why)."""

from __future__ import annotations

import pytest

from benchmarks.codegen_stats import k_step_text, register_words
from benchmarks.codegen_workloads import (
    BUDGET,
    WORKLOADS,
    check,
    load_baseline,
    measure,
    measure_budget,
)


@pytest.fixture(scope="module")
def rows() -> dict:
    out = {name: measure(build(), k_step_text, register_words) for name, build in WORKLOADS}
    out.update({name: measure_budget(build()) for name, build in BUDGET})
    return out


def test_no_regression_against_the_baseline(rows: dict) -> None:
    baseline = load_baseline()
    assert baseline, "benchmarks/codegen_baseline.json is missing"
    assert check(rows, baseline) == []


def test_tutorial_01_02_05_accesses_are_all_vectorised_and_nothing_stays_in_memory(
        rows: dict) -> None:
    for name, r in rows.items():
        if "vec%" not in r:
            continue  # a threadgroup budget row (table 1b)
        if name.startswith(("01 ", "02 ", "05 ")):
            assert r["vec%"] == 100, name
            assert r["ptr/thr"] == 0, name  # 32-bit offsets from the arguments
        if name.startswith(("01 ", "02 ", "03 ")):
            assert r["stack"] == 0, name


def test_check_reports_what_got_worse() -> None:
    base = {"k": {"vec%": 100, "acc/thr": 4, "ptr/thr": 0, "stack": 0, "bar/iter": 2,
                  "tg bytes": 64, "unpadded": 0}}
    worse = {"k": {"vec%": 50, "acc/thr": 8, "ptr/thr": 4, "stack": 16, "bar/iter": 3,
                   "tg bytes": 128, "unpadded": 1}}
    assert len(check(worse, base)) == 7
    assert check(base, base) == []
    # a baseline older than a figure: that figure is not compared yet
    old = {"k": {key: v for key, v in base["k"].items() if key != "unpadded"}}
    assert len(check(worse, old)) == 6
    assert check({}, base) == ["k: no longer measured"]


def test_ragged_kernels_move_their_bytes_in_16_byte_accesses_at_run_time() -> None:
    """Table 3 (benchmarks/codegen_ragged.py) on 64 rows (the shares do not depend on the
    row count): softmax over 1000 columns with row stride 1024 (a bound mask) and 1000 (the
    launcher's alignment variant), layer norm over 4000 columns."""
    from benchmarks.codegen_ragged import RAGGED, measure

    for name, case in RAGGED:
        r = measure(case, rows=64)
        assert r["ld16%"] >= 90 and r["st16%"] >= 90, (name, r)
        if "stride 1000" in name:
            assert r["variant"] == "in_stride%4,out_stride%4", (name, r)


def test_gemm_threadgroup_bytes_are_the_operand_tiles_need(rows: dict) -> None:
    """Every simdgroup GEMM tile shape of table 1 (64x64, 128x64, 128x128; fp16 and fp32): the
    epilogue adds no threadgroup memory to the operand tiles' (lower/dot/direct_store.py)."""
    gemms = {name: r for name, r in rows.items() if name.startswith("03 matmul")}
    assert len(gemms) == 6
    for name, r in gemms.items():
        assert r["tg bytes"] == r["operands"], name



def test_attention_backward_leaves_threadgroup_headroom(rows: dict) -> None:
    """Tutorial 06's backward (table 1b), d64 and d128, causal and not: at most 3/4 of Metal's
    32 KB (d64: its dots' operand tiles; d128: register-path dots whose operand conversions
    move 128x128 fp16 in two passes of 16 KB)."""
    backward = {name: r for name, r in rows.items() if "flash_attn_bwd" in name}
    assert len(backward) == 4
    for name, r in backward.items():
        assert r["tg bytes"] <= 24 * 1024, name
