"""tl.device_assert (tt.assert, debug builds only) through the plugin on the simulator.

A failing element is recorded in the hidden debug buffer; after the dispatch the launcher
prints CUDA's `__assertfail` line for each to stderr and raises DeviceAssertError, a
RuntimeError saying "device-side assert triggered" (what torch raises for CUDA and what
Triton's own tests catch). Metal cannot abort a kernel: it runs to the end.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.driver import driver

from msltrans.abi import debug_layout
from msltrans.runtime import debug_buffer
from msltrans.runtime.debug_buffer import DeviceAssertError


@pytest.fixture(autouse=True)
def sim_driver():
    active = driver.active
    if type(active).__name__ != "MetalDriver" or active.engine_name != "sim":
        pytest.skip("needs the Metal driver on the simulator engine")
    return active


@pytest.fixture(autouse=True, scope="module")
def private_kernel_cache(tmp_path_factory):
    # Triton's kernel cache key holds the kernel's source and first line, not its file path,
    # so a kernel compiled from a copy of this file elsewhere (another checkout) would report
    # that copy's path in the assert message. A private cache keeps the locations our own.
    with triton.knobs.cache.scope():
        triton.knobs.cache.dir = str(tmp_path_factory.mktemp("triton-cache"))
        yield


def _line_of(fn, needle: str) -> int:
    src, start = inspect.getsourcelines(fn.fn)
    return start + next(i for i, ln in enumerate(src) if needle in ln)


@triton.jit(debug=True)
def bounded_kernel(X, Y, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.device_assert(x < limit, "x must stay below limit")
    tl.store(Y + offs, x + 1)


@triton.jit
def plain_kernel(X, Y, limit, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.device_assert(x < limit, "never checked without debug")
    tl.store(Y + offs, x + 1)


@triton.jit(debug=True)
def masked_kernel(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0)
    tl.device_assert(x >= 0, "non-negative", mask=offs < n)


@triton.jit(debug=True)
def scalar_kernel(n):
    assert n % 2 == 0, "n must be even"


def test_failing_elements_raise_with_message_location_pid_and_index(capfd):
    block = 64
    x = np.arange(3 * block, dtype=np.int32)
    limit = 150  # elements 150..191 fail: program 2, indices 22..63
    xt, yt = torch.from_numpy(x), torch.zeros(3 * block, dtype=torch.int32)
    with pytest.raises(RuntimeError) as info:
        bounded_kernel[(3,)](xt, yt, limit, BLOCK=block, num_warps=2)
    err = info.value
    assert isinstance(err, DeviceAssertError)
    line = _line_of(bounded_kernel, "tl.device_assert")
    text = str(err)
    assert "device-side assert triggered" in text
    assert "x must stay below limit" in text
    assert f"{__file__}:{line}" in text
    assert "pid (2, 0, 0) idx (22)" in text
    failing = [(2, i - 2 * block) for i in range(3 * block) if x[i] >= limit]
    assert err.total == len(failing)
    assert sorted((f.pid[0], f.index[0]) for f in err.failures) == failing
    stderr = capfd.readouterr().err
    for pid, i in failing:
        assert (f"{__file__}:{line}: bounded_kernel: block: [{pid},0,0], thread: [{i % 64},0,0] "
                f"Assertion `x must stay below limit` failed. (idx {i})") in stderr
    # Metal cannot abort: the kernel ran to its end
    assert np.array_equal(yt.numpy(), x + 1)


def test_passing_assert_is_silent(capfd):
    x = np.arange(128, dtype=np.int32) - 64
    yt = torch.zeros(128, dtype=torch.int32)
    bounded_kernel[(2,)](torch.from_numpy(x), yt, 64, BLOCK=64, num_warps=2)
    assert np.array_equal(yt.numpy(), x + 1)
    captured = capfd.readouterr()
    assert captured.out == "" and "Assertion" not in captured.err


def test_disabled_without_debug(monkeypatch):
    monkeypatch.delenv("TRITON_DEBUG", raising=False)
    x = np.arange(32, dtype=np.int32)
    yt = torch.zeros(32, dtype=torch.int32)
    plain_kernel[(1,)](torch.from_numpy(x), yt, 0, BLOCK=32, num_warps=1)
    assert np.array_equal(yt.numpy(), x + 1)


def test_debug_launch_option_enables_it():
    x = np.arange(32, dtype=np.int32)
    yt = torch.zeros(32, dtype=torch.int32)
    with pytest.raises(DeviceAssertError, match="never checked without debug"):
        plain_kernel[(1,)](torch.from_numpy(x), yt, 5, BLOCK=32, num_warps=1, debug=True)


@pytest.mark.parametrize("n, fails", [(20, False), (33, True)])
def test_mask_excludes_elements(n, fails):
    x = np.zeros(64, dtype=np.int32)
    x[32:] = -1  # only elements >= 32 are negative
    call = lambda: masked_kernel[(1,)](torch.from_numpy(x), n, BLOCK=64, num_warps=1)  # noqa: E731
    if not fails:
        call()
        return
    with pytest.raises(DeviceAssertError) as info:
        call()
    assert info.value.total == n - 32
    assert [f.index for f in info.value.failures] == [(i,) for i in range(32, n)]


def test_scalar_assert_reports_once_per_program():
    with pytest.raises(DeviceAssertError, match=r"n must be even.*idx \(\)") as info:
        scalar_kernel[(2, 1, 3)](7, num_warps=4)
    # once per program (thread 0), sorted by pid
    assert info.value.total == 6
    assert [f.pid for f in info.value.failures] == [(x, 0, z) for x in range(2) for z in range(3)]
    scalar_kernel[(2,)](8, num_warps=4)


def test_failures_lost_to_overflow_still_raise(monkeypatch, capfd):
    room = 3
    monkeypatch.setenv(debug_buffer.BUFFER_ENV,
                       str((debug_layout.HEADER_WORDS + room * debug_layout.RECORD_WORDS) * 4))
    x = np.arange(64, dtype=np.int32)
    with pytest.raises(DeviceAssertError, match=r"64 element\(s\) failed.*61 record\(s\) lost"):
        bounded_kernel[(1,)](torch.from_numpy(x), torch.zeros(64, dtype=torch.int32), -1,
                             BLOCK=64, num_warps=2)
    assert "61 record(s) were lost" in capfd.readouterr().err


def test_print_and_assert_share_the_buffer(capfd):
    @triton.jit(debug=True)
    def kernel(X, BLOCK: tl.constexpr):
        x = tl.load(X + tl.arange(0, BLOCK))
        tl.device_print("x", x)
        tl.device_assert(x != 3, "three")

    x = np.arange(32, dtype=np.int32)
    with pytest.raises(DeviceAssertError, match=r"three.*idx \(3\)"):
        kernel[(1,)](torch.from_numpy(x), BLOCK=32, num_warps=1)
    out = capfd.readouterr().out.splitlines()
    assert out == [f"pid (0, 0, 0) idx ({i:2}) x: {i}" for i in range(32)]


def test_error_survives_pickling():
    # Triton's run_in_process (upstream test_debug.py) sends the exception between processes
    import pickle

    x = np.arange(32, dtype=np.int32)
    with pytest.raises(DeviceAssertError) as info:
        bounded_kernel[(1,)](torch.from_numpy(x), torch.zeros(32, dtype=torch.int32), 30,
                             BLOCK=32, num_warps=1)
    back = pickle.loads(pickle.dumps(info.value))
    assert str(back) == str(info.value) and back.total == 2 and back.failures == info.value.failures
