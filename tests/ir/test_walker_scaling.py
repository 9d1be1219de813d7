"""The walker's region-ownership query runs once per module, not once per op (issue 38: on
a kernel with thousands of ops a per-op query is quadratic, and it runs on a Mac too)."""

from __future__ import annotations

import time

import triton
import triton.language as tl

import msltrans.ir.walker as walker
from msltrans.ir import read_module
from msltrans.toolchain import to_ttgir
from msltrans.workloads.topk_kernel import topk_kernel


@triton.jit
def _chain(x_ptr, STEPS: tl.constexpr):
    offs = tl.arange(0, 32)
    x = tl.load(x_ptr + offs)
    for i in tl.static_range(STEPS):
        x = x * 0.5 + i
    tl.store(x_ptr + offs, x)


def _chain_ttgir(steps: int):
    return to_ttgir(_chain, {"x_ptr": "*fp32"}, {"STEPS": steps}, 1)


def _ttgir(n: int):
    sig = {"x_ptr": "*fp32", "values_ptr": "*fp32", "indices_ptr": "*i32"}
    return to_ttgir(topk_kernel, sig, {"K": 16, "N": n, "LOG_N": n.bit_length() - 1}, 4)


def _ops(mod) -> int:
    found: list = []
    mod.walk(lambda o: found.append(o))
    return len(found)


def test_owned_regions_once_per_module(monkeypatch):
    mod = _ttgir(1024)
    assert _ops(mod) > 2000
    calls: list[int] = []
    real = walker._owned_regions

    def counted(raw_ops):
        calls.append(len(raw_ops))
        return real(raw_ops)

    monkeypatch.setattr(walker, "_owned_regions", counted)
    read_module(mod)
    assert calls == [_ops(mod)]


def test_read_module_time_grows_with_ops_not_their_square():
    small, large = _chain_ttgir(100), _chain_ttgir(2000)
    ratio_ops = _ops(large) / _ops(small)
    assert ratio_ops > 15

    def best(mod) -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            read_module(mod)
            times.append(time.perf_counter() - start)
        return min(times)

    ratio_time = best(large) / best(small)
    # Linear: about ratio_ops (plus noise); a per-op query over all ops would give its square.
    assert ratio_time < 3 * ratio_ops, (ratio_time, ratio_ops)
