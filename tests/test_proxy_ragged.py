"""The GPU proxy's ragged rows, here: the hand-written references (vector interior, scalar
tail) on the simulator against float64, at bounds that cut a run, and run_gpu's check that
a NaN in the reference means "never written"."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.proxy.case_types import Hand


def _run(hand: Hand, data: dict[str, np.ndarray]) -> None:
    from benchmarks.proxy.build_proxy import _run_sim_hand

    _run_sim_hand(hand, data)


@pytest.mark.parametrize("cols,stride", [(1000, 1024), (1000, 1000), (1001, 1004), (3, 4)])
def test_hand_softmax_ragged(cols: int, stride: int) -> None:
    rows = 5
    rng = np.random.default_rng(cols)
    # exactly the rows' extent: a read past the last row's `cols` faults or reads the
    # simulator's slack bytes, which the NaN checks below would see
    x = rng.standard_normal((rows - 1) * stride + cols).astype(np.float32)
    y = np.full_like(x, np.nan)
    hand = Hand("softmax_ragged.metal", "softmax_ragged", 256, {"BLOCK": "1024"}, (3, 1, 1),
                ["y", "x", ("i32", rows), ("i32", cols), ("i32", stride)])
    data = {"x": x, "y": y}
    _run(hand, data)
    for r in range(rows):
        row = x[r * stride:r * stride + cols].astype(np.float64)
        want = np.exp(row - row.max())
        want /= want.sum()
        np.testing.assert_allclose(data["y"][r * stride:r * stride + cols], want, rtol=1e-5)
        gap = data["y"][r * stride + cols:(r + 1) * stride]
        assert np.isnan(gap).all()  # never written


@pytest.mark.parametrize("dtype,cols", [(np.float16, 4000), (np.float32, 4000),
                                        (np.float32, 1004)])
def test_hand_layer_norm_ragged(dtype: type, cols: int) -> None:
    rows = 3
    rng = np.random.default_rng(cols)
    x = rng.standard_normal((rows, cols)).astype(dtype)
    w, b = (rng.standard_normal(cols).astype(dtype) for _ in range(2))
    data = {"x": x, "y": np.full_like(x, np.nan), "w": w, "b": b,
            "mean": np.zeros(rows, np.float32), "rstd": np.zeros(rows, np.float32)}
    t = "half" if dtype == np.float16 else "float"
    hand = Hand("layer_norm_ragged.metal", "layer_norm_ragged", 256,
                {"LN_T": t, "BLOCK": "4096"}, (rows, 1, 1),
                ["x", "y", "w", "b", "mean", "rstd", ("i32", cols), ("fp32", 1e-5)])
    _run(hand, data)
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(((x64 - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    want = (x64 - mu) * rstd * w.astype(np.float64) + b.astype(np.float64)
    tol = 1e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(data["y"].astype(np.float64), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(data["mean"], mu[:, 0], rtol=1e-5, atol=1e-6)


def test_run_gpu_close_keeps_nan_as_never_written() -> None:
    import torch

    from benchmarks.proxy.run_gpu import _close

    ref = torch.tensor([[1.0, 2.0, float("nan")]], dtype=torch.float64)
    assert _close(torch.tensor([[1.0, 2.0, float("nan")]]), ref, 1e-6)
    assert not _close(torch.tensor([[1.0, 2.0, 0.0]]), ref, 1e-6)  # a stray write
    assert not _close(torch.tensor([[1.0, float("nan"), float("nan")]]), ref, 1e-6)
    assert not _close(torch.tensor([[1.0, 2.5, float("nan")]]), ref, 1e-6)


def test_interquartile_mean_falls_between_the_timers_steps() -> None:
    from benchmarks.proxy.run_gpu import _interquartile_mean

    # a kernel whose true time sits between two steps of the event timer
    steps = [20.51] * 60 + [21.15] * 40
    assert 20.51 < _interquartile_mean(steps) < 21.15
    assert _interquartile_mean([1.0, 2.0, 3.0, 100.0]) == 2.5  # the outlier is dropped
    assert _interquartile_mean([4.0]) == 4.0
