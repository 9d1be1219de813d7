"""`tl.load(..., volatile=True)`: relaxed atomic loads (lower/memory/ops_volatile.py), and the
spin-lock / ticket patterns that need them, with 64 programs contending.

What the simulator can and cannot show. It runs threadgroups one after another (a later
program starts when the earlier one has finished), so a program never finds the lock held
by another: the lock tests prove that the acquire/volatile-read/release code compiles under
the simulator's Metal rules, runs, keeps every update (64 increments, 64 distinct tickets),
and stays correct when the CAS fails spuriously (`MSLTRANS_SIM_CAS_SPURIOUS`, which drives
the retry loop and its volatile re-reads). The ticket test is written so that it terminates
in any order a GPU (or an interleaving simulator) schedules programs in, provided the
programs run concurrently: each waits for its turn with volatile loads. Memory-ordering
effects of real hardware (a stale L1 line) cannot be observed here; the MSL checks below pin
down what protects against them: relaxed atomic loads followed by an acquire fence for the
volatile reads, and the fences the atomics carry (docs/atomics.md).
"""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from msltrans.selftest.kernels import locked_counter
from tests.support.run_kernel import compile_kernel, run_kernel

PROGRAMS = 64



@triton.jit
def ticket_chain(turn_ptr, acc_ptr, seen_ptr):
    pid = tl.program_id(0)
    while tl.load(turn_ptr, volatile=True) != pid:  # wait for the previous program
        pass
    acc = tl.load(acc_ptr, volatile=True)
    tl.store(seen_ptr + pid, acc)
    tl.store(acc_ptr, acc * 3 + pid)
    tl.atomic_xchg(turn_ptr, pid + 1)  # release: the next program may go


@pytest.mark.parametrize("spurious", ["", "2", "3"])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_spin_lock_with_64_programs(monkeypatch: pytest.MonkeyPatch, spurious: str,
                                    num_warps: int) -> None:
    monkeypatch.setenv("MSLTRANS_SIM_CAS_SPURIOUS", spurious)
    lock, counter = np.zeros(1, np.int32), np.zeros(1, np.int32)
    seen = np.full(PROGRAMS, -1, np.int32)
    run_kernel(locked_counter, (PROGRAMS,), lock, counter, seen, num_warps=num_warps)
    assert counter[0] == PROGRAMS and lock[0] == 0
    assert sorted(seen.tolist()) == list(range(PROGRAMS))  # one distinct ticket each


def test_ticket_chain_passes_values_between_64_programs() -> None:
    turn, acc = np.zeros(1, np.int32), np.zeros(1, np.int32)
    seen = np.full(PROGRAMS, -1, np.int32)
    run_kernel(ticket_chain, (PROGRAMS,), turn, acc, seen, num_warps=2)
    expected, value = [], 0
    for pid in range(PROGRAMS):
        expected.append(value)
        value = (value * 3 + pid) & 0xFFFFFFFF
    wrap = np.array(expected, np.uint32).astype(np.int32)
    assert seen.tolist() == wrap.tolist()
    assert turn[0] == PROGRAMS and acc[0] == np.uint32(value).astype(np.int32)


def test_lock_msl_has_fences_and_atomic_loads() -> None:
    lock, counter, seen = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(64, np.int32)
    source = compile_kernel(locked_counter, (lock, counter, seen), 1).source
    body = source[source.index("kernel void"):]
    fence = "atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device)"
    cas, load = body.index("// tt.atomic_cas"), body.index("// tt.load")
    xchg = body.index("// tt.atomic_rmw")
    assert fence in body[cas:load]           # acquire after taking the lock
    assert fence in body[body.index("// tt.store", load):xchg + 2000]  # release around xchg
    volatile = body[load:body.index("// tt.store", load)]
    assert "atomic_load_explicit((device atomic_uint*)" in volatile
    assert "memory_order_relaxed" in volatile
    assert volatile.index(fence) > volatile.index("atomic_load_explicit")  # then acquire


@triton.jit
def volatile_copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=m, other=7, volatile=True), mask=offs < BLOCK)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16, np.int16, np.int8,
                                   np.uint8, np.bool_])
@pytest.mark.parametrize("block, num_warps", [(256, 2), (16, 4)])  # 16 x 128 threads: replicas
def test_volatile_tensor_loads_every_width(dtype, block: int, num_warps: int) -> None:  # noqa: ANN001
    rng = np.random.default_rng(block)
    n = block - 3
    src = (rng.standard_normal(n) * 50).astype(dtype) if dtype != np.bool_ else \
        rng.integers(0, 2, n).astype(np.bool_)
    dst = np.zeros(block, dtype)
    run_kernel(volatile_copy, (1,), src, dst, n, num_warps=num_warps, BLOCK=block)
    assert dst[:n].tobytes() == src.tobytes()
    assert (dst[n:] == np.array(7).astype(dtype)).all()


def test_volatile_bf16_is_its_bits() -> None:
    @triton.jit
    def bf16_copy(src, dst, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(src + offs, volatile=True)
        tl.store(dst + offs, x.to(tl.float32))

    import torch

    from msltrans.ir import read_module
    from msltrans.lower import lower_module
    from msltrans.toolchain import to_ttgir
    from tests.support.run_kernel import dispatch

    bits = np.random.default_rng(0).integers(0, 2**16, 64).astype(np.uint16)
    bits[(bits & 0x7F80) == 0x7F80] = 0x3F80  # no NaN/inf patterns
    prog = lower_module(read_module(to_ttgir(bf16_copy, {"src": "*bf16", "dst": "*fp32"},
                                             {"BLOCK": 64}, 1)))
    out = np.zeros(64, np.float32)
    dispatch(prog, (1,), (bits, out))
    expected = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16).float().numpy()
    assert out.tobytes() == expected.tobytes()


def test_volatile_64_bit_load_refuses() -> None:
    src, dst = np.zeros(16, np.int64), np.zeros(16, np.int64)
    with pytest.raises(MetalNonRecoverableError, match="no 64-bit atomic load"):
        compile_kernel(volatile_copy, (src, dst, 16), 1, BLOCK=16)


def test_volatile_load_needs_msl_3_2() -> None:
    from msltrans.ir import read_module
    from msltrans.lower import lower_module
    from msltrans.toolchain import to_ttgir

    mod = to_ttgir(volatile_copy, {"src": "*fp32", "dst": "*fp32", "n": "i32"}, {"BLOCK": 16}, 1)
    with pytest.raises(MetalNonRecoverableError, match="volatile load.*needs MSL 3.2"):
        lower_module(read_module(mod), msl_version_target=310)
