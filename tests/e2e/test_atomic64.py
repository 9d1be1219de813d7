"""64-bit tl.atomic_add / and / or / xor (two 32-bit atomics) and uint64 max/min (atomic_ulong)
whose old value is unused, against numpy's wrapping int64/uint64 arithmetic.

Many programs contend for a few addresses; values carry across the 32-bit boundary in both
directions (negative addends, low words near 0xffffffff). The simulator runs threadgroups one
after another, so the interleavings a GPU could produce *inside* the two-word update are
exercised separately: test_add64_split_interleavings runs the emitted helper's two halves with
a barrier between them under several thread orders, and test_add64_model_all_interleavings
checks the same algorithm under every interleaving of a small case.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import msltrans.sim as sim
from msltrans import msl_version
from msltrans.errors import MetalNonRecoverableError
from msltrans.lower.atomics import atomic64
from tests.conformance.upstream_style_support import require_metal_sim
from tests.support.run_kernel import compile_kernel

SLOTS = 5
M32 = 2**32


@pytest.fixture(scope="module", autouse=True)
def _metal_sim() -> None:
    require_metal_sim()


@triton.jit
def rmw64_kernel(X, Z, n, OP: tl.constexpr, SEM: tl.constexpr, SCOPE: tl.constexpr,
                 SLOTS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = (offs < n) & (offs % 7 != 3)  # the tail and every 7th element masked off
    x = tl.load(X + offs, mask=m)
    slot = Z + offs % SLOTS
    if OP == "add":
        tl.atomic_add(slot, x, mask=m, sem=SEM, scope=SCOPE)
    elif OP == "and":
        tl.atomic_and(slot, x, mask=m, sem=SEM, scope=SCOPE)
    elif OP == "or":
        tl.atomic_or(slot, x, mask=m, sem=SEM, scope=SCOPE)
    elif OP == "xor":
        tl.atomic_xor(slot, x, mask=m, sem=SEM, scope=SCOPE)
    elif OP == "max":
        tl.atomic_max(slot, x, mask=m, sem=SEM, scope=SCOPE)
    else:
        tl.atomic_min(slot, x, mask=m, sem=SEM, scope=SCOPE)


NP_OPS = {"add": np.add, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
          "max": np.maximum, "min": np.minimum}


def _reference(op: str, z0: np.ndarray, x: np.ndarray, n: int) -> np.ndarray:
    idx = np.arange(len(x))
    keep = (idx < n) & (idx % 7 != 3)
    out = z0.copy()
    with np.errstate(over="ignore"):
        for k in range(SLOTS):
            out[k] = NP_OPS[op].reduce(np.concatenate([z0[k:k + 1], x[keep & (idx % SLOTS == k)]]))
    return out


def _run(op: str, x: np.ndarray, z0: np.ndarray, n: int, block: int = 128, num_warps: int = 4,
         sem: str = "acq_rel", scope: str = "gpu") -> np.ndarray:
    z = torch.from_numpy(z0.copy())
    rmw64_kernel[(triton.cdiv(len(x), block),)](torch.from_numpy(x), z, n, OP=op, SEM=sem,
                                                 SCOPE=scope, SLOTS=SLOTS, BLOCK=block,
                                                 num_warps=num_warps)
    return z.numpy()


def _carry_data(dtype: type, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Addends and start values whose low words sit near 0 and 0xffffffff: carries and
    borrows across bit 32 on most steps."""
    rng = np.random.default_rng(seed)
    near = rng.choice(np.array([0, 1, 2, M32 - 1, M32 - 2, M32 - 3], np.uint64), n)
    high = rng.integers(0, M32, n, dtype=np.uint64) << np.uint64(32)
    x = (near | high) if dtype == np.uint64 else (near | high).view(np.int64)
    if dtype == np.int64:  # a mix of small negative and positive addends, and wide ones
        small = rng.integers(-5, 6, n).astype(np.int64)
        x = np.where(rng.random(n) < 0.5, small, x)
    z0 = np.array([M32 - 1, M32, 2**63 - 1, 2**64 - 1, M32 * (M32 - 1)],
                  np.uint64).view(dtype)
    return x.astype(dtype), z0


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_add64_contended_carries(dtype: type) -> None:
    n = 2000  # 16 programs of 128 on 5 addresses; the last program's tail is masked off
    x, z0 = _carry_data(dtype, 2048, seed=3)
    np.testing.assert_array_equal(_run("add", x, z0, n), _reference("add", z0, x, n))


def test_add64_borrow_chain() -> None:
    # -1 per element from 2^32 + 10: the low word borrows (the high word gets 0xffffffff
    # + carry 0) on the first steps only once it crosses zero; then ends at 2^32 + 10 - k.
    x = np.full(1024, -1, np.int64)
    z0 = np.full(SLOTS, M32 + 10, np.int64)
    np.testing.assert_array_equal(_run("add", x, z0, 1024), _reference("add", z0, x, 1024))


@pytest.mark.parametrize(("sem", "scope"), [("relaxed", "gpu"), ("acquire", "cta"),
                                            ("release", "gpu"), ("acq_rel", "cta")])
def test_add64_sem_scope(sem: str, scope: str) -> None:
    x, z0 = _carry_data(np.int64, 300, seed=5)
    got = _run("add", x, z0, 300, block=64, num_warps=2, sem=sem, scope=scope)
    np.testing.assert_array_equal(got, _reference("add", z0, x, 300))


def test_add64_replicated_layout() -> None:
    # 16 elements on 128 threads: most threads hold replicas, each element is added once.
    x, z0 = _carry_data(np.int64, 160, seed=7)
    got = _run("add", x, z0, 150, block=16, num_warps=4)
    np.testing.assert_array_equal(got, _reference("add", z0, x, 150))


@pytest.mark.parametrize("op", ["and", "or", "xor"])
@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_bitwise64(op: str, dtype: type) -> None:
    rng = np.random.default_rng(11)
    x = rng.integers(0, 2**64, 1000, dtype=np.uint64)
    if op == "and":  # mostly ones, so the result is not all zeros
        x |= rng.integers(0, 2**64, 1000, dtype=np.uint64) | rng.integers(0, 2**64, 1000,
                                                                              dtype=np.uint64)
    x = x.view(dtype)
    z0 = rng.integers(0, 2**64, SLOTS, dtype=np.uint64).view(dtype)
    np.testing.assert_array_equal(_run(op, x, z0, 1000), _reference(op, z0, x, 1000))


@pytest.mark.parametrize("op", ["max", "min"])
def test_umax_umin64(op: str) -> None:
    # Unsigned order: values with bit 63 set are the largest; equal high words differ in the
    # low word only.
    rng = np.random.default_rng(13)
    x = rng.integers(0, 2**64, 1000, dtype=np.uint64)
    x[::9] = (x[::9] & np.uint64(0xFFFFFFFF00000000)) | np.uint64(5)
    z0 = np.array([0, 2**64 - 1, 2**63, 2**63 - 1, M32], np.uint64)
    np.testing.assert_array_equal(_run(op, x, z0, 1000), _reference(op, z0, x, 1000))


@triton.jit
def bincount64_kernel(X, COUNTS, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(COUNTS + tl.load(X + offs, mask=m, other=0), 1, mask=m, sem="relaxed")


def test_bincount_style_int64_counts() -> None:
    # What torch.bincount-style kernels do: count into int64 (torch's count dtype).
    x = torch.from_numpy(np.random.default_rng(17).integers(0, 37, 5000))
    counts = torch.zeros(37, dtype=torch.int64)
    bincount64_kernel[(triton.cdiv(5000, 256),)](x, counts, 5000, BLOCK=256)
    assert torch.equal(counts, torch.bincount(x, minlength=37))


@triton.jit
def scalar_add64_kernel(Z, V):
    tl.atomic_add(Z, tl.load(V + tl.program_id(0)))  # one thread per program


def test_add64_scalar_pointer() -> None:
    v = np.array([M32 - 1, 1, -(2**40), 3 * M32 + 7, -1] * 6, np.int64)
    z = torch.tensor([M32 - 2], dtype=torch.int64)
    scalar_add64_kernel[(len(v),)](z, torch.from_numpy(v))
    assert z.item() == int(np.int64(M32 - 2) + v.sum())


# --- refusals ------------------------------------------------------------------------------

@triton.jit
def used_kernel(Z, OLD, OP: tl.constexpr):
    offs = tl.arange(0, 32)
    if OP == "add":
        old = tl.atomic_add(Z + offs, 1)
    elif OP == "max":
        old = tl.atomic_max(Z + offs, 1)
    elif OP == "xchg":
        old = tl.atomic_xchg(Z + offs, 1)
    else:
        old = tl.atomic_cas(Z + offs, offs.to(tl.int64) * 0, offs.to(tl.int64))
    tl.store(OLD + offs, old)


@pytest.mark.parametrize(("op", "dtype", "match"), [
    ("add", np.int64, r"64-bit atomic `add` whose old value is used.*fetch-and-modify"),
    ("max", np.uint64, r"64-bit atomic `umax` whose old value is used.*return void"),
    ("max", np.int64, r"64-bit atomic signed max.*compare unsigned"),
    ("xchg", np.int64, r"64-bit atomic exchange"),
    ("cas", np.int64, r"64-bit atomic compare-and-swap"),
])
def test_refusals(op: str, dtype: type, match: str) -> None:
    z = np.zeros(32, dtype)
    with pytest.raises(MetalNonRecoverableError, match=match):
        compile_kernel(used_kernel, (z, z.copy()), 1, OP=op)


@triton.jit
def mixed_kernel(Z, X, SECOND: tl.constexpr):
    offs = tl.arange(0, 32)
    x = tl.load(X + offs)
    tl.atomic_add(Z + offs, x)
    if SECOND == "xor":
        tl.atomic_xor(Z + offs, x)
    else:
        tl.atomic_max(Z + offs, x)


@pytest.mark.parametrize(("second", "dtype"), [("xor", np.int64), ("max", np.uint64)])
def test_mixed_kinds_refused(second: str, dtype: type) -> None:
    z = np.zeros(32, dtype)
    with pytest.raises(MetalNonRecoverableError, match="64-bit atomics of different kinds"):
        compile_kernel(mixed_kernel, (z, z.copy()), 1, SECOND=second)


# --- the two halves of the add, interleaved ---------------------------------------------------

_SPLIT_KERNEL = """
#include <metal_stdlib>
using namespace metal;
{helper}
kernel void split(device long* z [[buffer(0)]], device const long* v [[buffer(1)]],
                  device const uint* first [[buffer(2)]],
                  uint tid [[thread_position_in_threadgroup]]) {{
    // Threads with first[tid] = 1 finish their whole add before the barrier; the others do
    // the low word, wait for everyone, then the high word: every high update lands after
    // every low update, the order a GPU could produce at its worst.
    device long* p = z + tid % 3;
    uint hi = 0u;
    if (first[tid] != 0u) msl_atomic_add64(p, v[tid]);
    else hi = msl_atomic_add64_low(p, ulong(v[tid]));
    threadgroup_barrier(mem_flags::mem_device);
    if (first[tid] == 0u) msl_atomic_add64_high(p, hi);
}}
"""


@pytest.mark.parametrize("schedule", ["forward", "reverse", "shuffle"])
def test_add64_split_interleavings(schedule: str) -> None:
    lib = sim.compile_shader(_SPLIT_KERNEL.format(helper=atomic64.helper("add")[1]))
    x, z0 = _carry_data(np.int64, 96, seed=19)
    for seed in range(3):
        first = np.random.default_rng(seed).integers(0, 2, 96).astype(np.uint32)
        z = z0[:3].copy()
        lib.split(z, x, first, threads=96, group_size=96, schedule=schedule, seed=seed)
        with np.errstate(over="ignore"):
            want = np.array([z0[k] + x[k::3].sum() for k in range(3)], np.int64)
        np.testing.assert_array_equal(z, want)


def _model_add64(z: int, steps: list[tuple[int, str, int]]) -> int:
    """Run an interleaving of (thread, half, addend) steps with the helper's arithmetic."""
    lo, hi = z % M32, z // M32
    pending: dict[int, int] = {}
    for t, half, v in steps:
        if half == "low":
            old = lo
            lo = (lo + v % M32) % M32
            pending[t] = (v // M32 + (1 if old + v % M32 >= M32 else 0)) % M32
        else:
            hi = (hi + pending.pop(t)) % M32
    return hi * M32 + lo


def test_add64_model_all_interleavings() -> None:
    """Every interleaving of three threads' (low, high) steps — each thread's low before its
    high — ends at the exact 64-bit sum (mod 2^64)."""
    addends = [M32 - 1, (-3) % 2**64, 5 * M32 + 2]
    for z in (M32 - 2, 0, 2**64 - 1):
        want = (z + sum(addends)) % 2**64
        events = [(t, h) for t in range(3) for h in ("low", "high")]
        for order in itertools.permutations(events):
            if any(order.index((t, "low")) > order.index((t, "high")) for t in range(3)):
                continue
            assert _model_add64(z, [(t, h, addends[t]) for t, h in order]) == want


def test_native_minmax_follows_the_version_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """uint64 max/min use atomic_ulong, which msl_version's table dates (MSL 2.4, older than
    every supported target, so no guard is emitted); a newer date there would refuse it."""
    x, z = np.arange(8, dtype=np.uint64), np.zeros(SLOTS, np.uint64)
    args = dict(OP="max", SEM="relaxed", SCOPE="gpu", SLOTS=SLOTS, BLOCK=8)
    assert "#error" not in compile_kernel(rmw64_kernel, (x, z, 8), 1, **args).source
    monkeypatch.setitem(msl_version.FEATURES, "atomic_ulong", msl_version.Feature(400, "test"))
    monkeypatch.setenv(msl_version.ENV, "3.2")
    with pytest.raises(MetalNonRecoverableError, match=r"unsigned 64-bit tl\.atomic_max needs "
                                                       r"MSL 4\.0"):
        compile_kernel(rmw64_kernel, (x, z, 8), 1, **args)
