"""tl.atomic_poll (tt.atomic_poll): spin until *ptr == expected; timeout_ns=0 loads once.

References are numpy comparisons of the bits the kernel reads (the flags are not changed
while it runs, except in the cross-program tests). On one simulator worker thread a poll
that waits on a later program must end in the per-dispatch timeout, never hang; with two
workers the two programs run at once and the handshake completes, as on a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from scripts.conformance.classify import classify
from tests.support.diff import compile_typed, launch
from tests.support.run_kernel import check_msl_compiles, compile_kernel, run_kernel, sim_or_skip

FENCE = "atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_{})"
SCOPES = {"cta": "threadgroup", "gpu": "device"}


@triton.jit
def scalar_poll_kernel(flag, out, expected, SEM: tl.constexpr, SCOPE: tl.constexpr):
    matched = tl.atomic_poll(flag, expected, sem=SEM, scope=SCOPE)
    tl.store(out, matched.to(tl.int32) + 1)


@pytest.mark.parametrize("sem", ["relaxed", "acquire"])
@pytest.mark.parametrize("scope", ["cta", "gpu"])
@pytest.mark.parametrize(("dtype", "value"), [(np.int16, -1), (np.int16, -2**15),
                                              (np.int16, 2**15 - 1), (np.int32, -2**31),
                                              (np.int32, 7), (np.uint32, 2**32 - 1)])
def test_scalar_poll_already_set(dtype: type, value: int, sem: str, scope: str) -> None:
    # The flag holds the expected value: the spin ends at its first load, matched = true.
    flag = np.array([value, 12345], dtype)  # a neighbour half-word in the same 32-bit word
    out = np.zeros(1, np.int32)
    prog = run_kernel(scalar_poll_kernel, (3,), flag, out, value, SEM=sem, SCOPE=scope)
    assert out[0] == 2
    assert prog.source.count(FENCE.format(SCOPES[scope])) == (sem == "acquire")
    assert prog.shared_bytes == 0  # no timeout: the result is true everywhere, no broadcast
    assert "while (" in prog.source


@triton.jit
def tensor_poll_kernel(flag, expected, out, T: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    matched = tl.atomic_poll(flag + 1 + offs, tl.load(expected + offs), timeout_ns=T)
    tl.store(out + offs, matched)


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("block", [32, 128])
@pytest.mark.parametrize("dtype", [np.int16, np.uint16, np.int32, np.uint32])
def test_tensor_poll_timeout_zero_loads_once(dtype: type, block: int, num_warps: int) -> None:
    # flag + 1 puts 16-bit elements in both halves of their 32-bit words; about half match.
    rng = np.random.default_rng(block + num_warps)
    info = np.iinfo(dtype)
    flag = rng.integers(info.min, info.max, block + 2, dtype=dtype, endpoint=True)
    expected = flag[1:-1].copy()
    miss = rng.random(block) < 0.5
    expected[miss] ^= dtype(1) << dtype(rng.integers(0, 8 * np.dtype(dtype).itemsize))
    out = np.full(block, True)
    before = flag.copy()
    prog = run_kernel(tensor_poll_kernel, (2,), flag, expected, out, num_warps=num_warps,
                      T=0, BLOCK=block)
    np.testing.assert_array_equal(out, ~miss)
    assert flag.tobytes() == before.tobytes()  # polling never writes
    assert "while (" not in prog.source.split("tt.atomic_poll")[1].split("tt.store")[0]


@triton.jit
def wait_kernel(flag, payload, out):
    # Program 1 waits for program 0's release; the simulator runs program 0 first.
    if tl.program_id(0) == 0:
        tl.store(payload, 42)
        tl.atomic_xchg(flag, 1, sem="release", scope="gpu")
    else:
        tl.atomic_poll(flag, 1, sem="acquire", scope="gpu")
        tl.store(out, tl.load(payload))


def test_poll_after_an_earlier_programs_release() -> None:
    flag, payload, out = (np.zeros(1, np.int32) for _ in range(3))
    run_kernel(wait_kernel, (2,), flag, payload, out)
    assert (flag[0], out[0]) == (1, 42)


@triton.jit
def wait_for_later_kernel(flag, out):
    # Program 0 waits for program 1, which the simulator has not run yet: on a GPU both run
    # concurrently; here the spin never ends and the dispatch timeout must raise.
    if tl.program_id(0) == 0:
        tl.atomic_poll(flag, 1)
        tl.store(out, 1)
    else:
        tl.atomic_xchg(flag, 1, sem="release")


def _wait_for_later(monkeypatch: pytest.MonkeyPatch, workers: int) -> tuple:
    sim = sim_or_skip()
    monkeypatch.setenv("MSLTRANS_SIM_THREADS", str(workers))
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    prog = compile_kernel(wait_for_later_kernel, (flag, out))
    check_msl_compiles(prog.source)
    kernel = getattr(sim.compile_shader(prog.source), prog.kernel_name)
    t = prog.threads_per_group
    return sim, lambda: kernel(*prog.engine_args((flag, out)), threads=(2 * t, 1, 1),
                               group_size=(t, 1, 1), arg_casts=prog.arg_casts,
                               timeout=1.0), flag, out


def test_poll_on_a_later_program_times_out_instead_of_hanging(monkeypatch) -> None:
    sim, run, _, _ = _wait_for_later(monkeypatch, 1)   # one worker: programs run in order
    with pytest.raises(sim.KernelTimeoutError, match="MSLTRANS_SIM_TIMEOUT"):
        run()


def test_poll_on_a_concurrent_program_completes(monkeypatch) -> None:
    _, run, flag, out = _wait_for_later(monkeypatch, 2)   # each program on its own worker
    run()
    assert (flag[0], out[0]) == (1, 1)


@triton.jit
def timeout_arg_kernel(flag, out, timeout_ns):
    tl.store(out, tl.atomic_poll(flag, 1, timeout_ns=timeout_ns))


@triton.jit
def timeout_const_kernel(flag, out, T: tl.constexpr):
    tl.store(out, tl.atomic_poll(flag, 1, timeout_ns=T))


def test_timeouts_other_than_constant_zero_refuse() -> None:
    sig = {"flag": "*i32", "out": "*i1"}
    for fn, extra, cx in [(timeout_arg_kernel, {"timeout_ns": "i32"}, {}),
                          (timeout_const_kernel, {}, {"T": 1000})]:
        with pytest.raises(MetalNonRecoverableError,
                           match="tt.atomic_poll.*no global timer.*omit timeout_ns"):
            compile_typed(fn, sig | extra, cx)


def test_scalar_timeout_zero_broadcasts_thread0_result() -> None:
    for value, want in [(1, True), (0, False)]:
        flag, out = np.array([value], np.int32), np.array([not want])
        prog = compile_typed(timeout_const_kernel, {"flag": "*i32", "out": "*i1"}, {"T": 0})
        launch(prog, (1,), flag, out)
        assert out[0] == want


@pytest.mark.parametrize("ptr", ["*i64", "*u64"])  # u64 is i64 in the IR (signless)
def test_64bit_poll_refused_as_hardware(ptr: str) -> None:
    match = r"64-bit atomic load \(atomic_poll on i64\).*no 64-bit atomic loads"
    with pytest.raises(MetalNonRecoverableError, match=match) as err:
        compile_typed(scalar_poll_kernel, {"flag": ptr, "out": "*i32", "expected": "i32"},
                      {"SEM": "acquire", "SCOPE": "gpu"})
    row = {"outcome": "xfail", "reason": f"refused: MetalNonRecoverableError: {err.value}",
           "refusal": {"op": "tt.atomic_poll", "reason": str(err.value)}}
    assert classify(row).category == "hardware"  # the conformance bucket "no 64-bit atomics"


def test_sys_scope_refused() -> None:
    with pytest.raises(MetalNonRecoverableError, match="tt.atomic_poll.*system-scope.*'gpu'"):
        compile_typed(scalar_poll_kernel, {"flag": "*i32", "out": "*i32", "expected": "i32"},
                      {"SEM": "relaxed", "SCOPE": "sys"})
