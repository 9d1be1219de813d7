"""Returned old values and final memory of tl.atomic_xchg / tl.atomic_cas on fp32 (bit for bit:
-0.0, NaN payloads, signalling NaNs, denormals) and of tl.atomic_max/min/and/or/xor on int32 and
uint32 (masked, uint32 values past 2**31).

The references are numpy/Python written to the ops' semantics. Without contention (one update
per address) old values and memory are fixed. With contention the order of the updates is
the GPU's choice, so the check is order-independent: some serial order of the updates gives
every update exactly the old value it returned and leaves the final memory (`serializable`).
Masked-off lanes return 0 (msltrans's documented choice; Triton leaves them undefined).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import triton
import triton.language as tl

from tests.e2e.test_atomics import cas_spurious  # noqa: F401 - the fixture, used by name
from tests.support.run_kernel import run_kernel

# fp32 bit patterns: +-0, quiet NaNs with and without payload and sign, signalling NaNs
# (payload in the low bits), infinities, denormals, ordinary numbers.
SPECIAL = np.array([0x00000000, 0x80000000, 0x7FC00000, 0xFFC00000, 0x7FC12345, 0xFFE54321,
                    0x7F800001, 0xFF812345, 0x7F800000, 0xFF800000, 0x00000001, 0x807FFFFF,
                    0x3F800000, 0xC0490FDB], np.uint32)


def serializable(init: Any, updates: list[Any], olds: list[Any], final: Any,
                 op: Callable[[Any, Any], Any]) -> bool:
    """Whether some serial order of `updates` (each state -> op(state, update)) starting at
    `init` has update i see `olds[i]` and ends at `final`. Depth-first search: updates that
    leave the state unchanged may always go at once (moving them earlier in a valid order
    keeps it valid), so only state-changing ones branch."""
    dead: set[tuple[Any, frozenset[int]]] = set()

    def go(state: Any, rest: frozenset[int]) -> bool:
        if not rest:
            return state == final
        if (state, rest) in dead:
            return False
        ready = [i for i in rest if olds[i] == state]
        idle = frozenset(i for i in ready if op(state, updates[i]) == state)
        if idle:
            ok = go(state, rest - idle)
        else:
            ok = any(go(op(state, updates[i]), rest - {i}) for i in ready)
        if not ok:
            dead.add((state, rest))
        return ok

    return go(init, frozenset(range(len(updates))))


def test_serializable_rejects_impossible_histories() -> None:
    # The checker itself: a cycle of exchanges detached from the initial value, a max that
    # saw a value larger than the final one, an old value nobody produced.
    xchg = lambda s, x: x  # noqa: E731
    assert serializable(0, [1, 2, 3], [0, 1, 2], 3, xchg)
    assert not serializable(0, [1, 2, 3], [0, 3, 2], 1, xchg)  # 2 and 3 saw each other
    assert serializable(5, [7, 1, 9], [5, 7, 7], 9, max)
    assert serializable(5, [7, 1, 9], [5, 9, 7], 9, max)  # 1 went last, a no-op
    assert not serializable(5, [7, 1, 9], [5, 5, 9], 9, max)  # nothing left 9 before the end
    assert not serializable(0, [1, 2], [0, 5], 2, max)
    assert serializable(6, [3, 3], [6, 5], 6, lambda s, x: s ^ x)


@triton.jit
def rmw_kernel(z_ptr, x_ptr, m_ptr, old_ptr, n, K: tl.constexpr, OP: tl.constexpr,
               BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inb = offs < n
    m = inb & (tl.load(m_ptr + offs, mask=inb, other=0) != 0)
    x = tl.load(x_ptr + offs, mask=inb)
    slot = z_ptr + offs % K  # K >= n: an address per element; small K: contention
    if OP == "max":
        old = tl.atomic_max(slot, x, mask=m)
    elif OP == "min":
        old = tl.atomic_min(slot, x, mask=m)
    elif OP == "and":
        old = tl.atomic_and(slot, x, mask=m)
    elif OP == "or":
        old = tl.atomic_or(slot, x, mask=m)
    elif OP == "xor":
        old = tl.atomic_xor(slot, x, mask=m)
    else:
        old = tl.atomic_xchg(slot, x, mask=m)
    tl.store(old_ptr + offs, old, mask=inb)


NP_OPS = {"max": np.maximum, "min": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
          "xor": np.bitwise_xor, "xchg": lambda s, x: x}
PY_OPS = {"max": max, "min": min, "and": lambda s, x: s & x, "or": lambda s, x: s | x,
          "xor": lambda s, x: s ^ x, "xchg": lambda s, x: x}


def _int_data(dtype: type, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype is np.uint32:  # about half past 2**31, and the extremes
        x = rng.integers(0, 2**32, size, dtype=np.uint64).astype(np.uint32)
        ends = [0, 2**31 - 1, 2**31, 2**32 - 1]
    else:
        x = rng.integers(-(2**31), 2**31, size).astype(np.int32)
        ends = [-(2**31), -1, 0, 2**31 - 1]
    if size >= 8:
        x[:4] = ends
    return rng.permutation(x)


LAYOUTS = [(64, 4), (256, 2)]  # 64 elements on 128 threads (replicas), 4 registers a thread


@pytest.mark.parametrize(("block", "num_warps"), LAYOUTS)
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("op", ["max", "min", "and", "or", "xor", "xchg"])
def test_int_old_values_one_update_per_address(op: str, dtype: type, block: int,
                                               num_warps: int) -> None:
    n = 3 * block - 5  # the last program's tail is out of bounds
    z = _int_data(dtype, n, 1)
    x = _int_data(dtype, n, 2)
    m = (np.random.default_rng(3).random(n) < 0.7).astype(np.int32)
    before = z.copy()
    old = np.full(n, 77, dtype)
    run_kernel(rmw_kernel, (3,), z, x, m, old, n, num_warps=num_warps, K=4096, OP=op,
               BLOCK=block)
    on = m != 0
    np.testing.assert_array_equal(old[on], before[on])  # each saw the value before it
    np.testing.assert_array_equal(old[~on], 0)  # masked off: 0
    want = before.copy()
    want[on] = NP_OPS[op](before[on], x[on])
    np.testing.assert_array_equal(z, want)


@pytest.mark.parametrize(("block", "num_warps"), LAYOUTS)
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("op", ["max", "min", "and", "or", "xor", "xchg"])
def test_int_old_values_contended(op: str, dtype: type, block: int, num_warps: int) -> None:
    # 3 addresses, ~40-120 masked-in updates each, from every thread of 3 programs.
    n, k = 3 * block - 5, 3
    x = _int_data(dtype, n, 4)
    if op == "and":  # mostly-set bits, so the value does not collapse to 0 at once
        x |= _int_data(dtype, n, 5) | _int_data(dtype, n, 6)
    elif op == "or":
        x &= _int_data(dtype, n, 5) & _int_data(dtype, n, 6)
    m = (np.random.default_rng(7).random(n) < 0.8).astype(np.int32)
    init = _int_data(dtype, k, 8)
    z, old = init.copy(), np.full(n, 77, dtype)
    run_kernel(rmw_kernel, (3,), z, x, m, old, n, num_warps=num_warps, K=k, OP=op,
               BLOCK=block)
    np.testing.assert_array_equal(old[m == 0], 0)
    for a in range(k):
        mine = (np.arange(n) % k == a) & (m != 0)
        assert serializable(int(init[a]), x[mine].tolist(), old[mine].tolist(), int(z[a]),
                            PY_OPS[op]), (op, a)
        # and the final value is the order-independent reduction (max/min/and/or/xor)
        if op != "xchg":
            assert z[a] == NP_OPS[op].reduce(np.concatenate([init[a:a + 1], x[mine]]))


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32)


@pytest.mark.parametrize(("block", "num_warps"), LAYOUTS)
def test_f32_xchg_bits_one_update_per_address(block: int, num_warps: int) -> None:
    n = 2 * block - 3
    rng = np.random.default_rng(10)
    z = rng.choice(SPECIAL, n).view(np.float32)
    x = rng.choice(SPECIAL, n).view(np.float32)
    m = (rng.random(n) < 0.75).astype(np.int32)
    before = z.copy()
    old = np.full(n, 5.0, np.float32)
    run_kernel(rmw_kernel, (2,), z, x, m, old, n, num_warps=num_warps, K=4096, OP="xchg",
               BLOCK=block)
    on = m != 0
    np.testing.assert_array_equal(_bits(old)[on], _bits(before)[on])
    np.testing.assert_array_equal(_bits(old)[~on], 0)  # +0.0
    np.testing.assert_array_equal(_bits(z), np.where(on, _bits(x), _bits(before)))


def test_f32_xchg_bits_contended() -> None:
    # Distinct patterns (specials included) to 2 addresses: the exchanges form one chain from
    # the initial value to the final one, every pattern seen exactly once.
    block, n = 64, 128
    rest = np.random.default_rng(11).standard_normal(n).astype(np.float32).view(np.uint32)
    x = np.concatenate([SPECIAL[2:], rest[:n - SPECIAL.size + 2]]).view(np.float32)
    x = np.random.default_rng(12).permutation(x)
    assert np.unique(_bits(x)).size == n
    init = SPECIAL[:2].view(np.float32)  # +0.0 and -0.0
    z, old = init.copy(), np.zeros(n, np.float32)
    m = np.ones(n, np.int32)
    run_kernel(rmw_kernel, (2,), z, x, m, old, n, K=2, OP="xchg", BLOCK=block)
    for a in range(2):
        mine = np.arange(n) % 2 == a
        assert serializable(int(_bits(init)[a]), _bits(x)[mine].tolist(),
                            _bits(old)[mine].tolist(), int(_bits(z)[a]), PY_OPS["xchg"])


@triton.jit
def cas_kernel(z_ptr, c_ptr, v_ptr, old_ptr, K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    old = tl.atomic_cas(z_ptr + offs % K, tl.load(c_ptr + offs), tl.load(v_ptr + offs))
    tl.store(old_ptr + offs, old)


# (memory, compare): swapped exactly when the bit patterns are equal, as CUDA's atom.cas.b32.
CAS_PAIRS = [(0x00000000, 0x00000000), (0x80000000, 0x00000000), (0x00000000, 0x80000000),
             (0x80000000, 0x80000000), (0x7FC00000, 0x7FC00000), (0x7FC12345, 0x7FC00000),
             (0x7FC12345, 0x7FC12345), (0xFFC00000, 0x7FC00000), (0x7F800001, 0x7F800001),
             (0x7F800001, 0x7FC00001), (0x7F800000, 0x7F800000), (0x00000001, 0x00000001),
             (0x00000001, 0x00000000), (0x3F800000, 0x3F800000), (0x3F800000, 0x3F800001)]


@pytest.mark.usefixtures("cas_spurious")
@pytest.mark.parametrize(("block", "num_warps"), LAYOUTS)
def test_f32_cas_bits_one_update_per_address(block: int, num_warps: int) -> None:
    pairs = np.array(CAS_PAIRS, np.uint32)
    rows = np.random.default_rng(13).integers(0, len(pairs), 2 * block)
    mem, cmp = pairs[rows, 0], pairs[rows, 1]
    val = np.random.default_rng(14).choice(SPECIAL, 2 * block)  # -0.0, NaN payloads stored as is
    z, old = mem.copy().view(np.float32), np.zeros(2 * block, np.float32)
    run_kernel(cas_kernel, (2,), z, cmp.view(np.float32), val.view(np.float32), old,
               num_warps=num_warps, K=4096, BLOCK=block)
    np.testing.assert_array_equal(_bits(old), mem)
    np.testing.assert_array_equal(_bits(z), np.where(mem == cmp, val, mem))
    assert (mem == cmp).any() and (mem != cmp).any()


def _cas(state: int, update: tuple[int, int]) -> int:
    cmp, val = update
    return val if state == cmp else state


@pytest.mark.usefixtures("cas_spurious")
def test_f32_cas_bits_contended() -> None:
    # 2 addresses, 64 CASes each with compare/new values from a few patterns (+-0.0, two NaNs
    # differing only in payload, 1.0): many succeed, many fail; the histories must serialise.
    block, n = 64, 128
    pool = np.array([0x00000000, 0x80000000, 0x7FC00000, 0x7FC00001, 0x3F800000], np.uint32)
    rng = np.random.default_rng(15)
    cmp, val = rng.choice(pool, n), rng.choice(pool, n)
    init = pool[:2].copy()
    z, old = init.copy().view(np.float32), np.zeros(n, np.float32)
    run_kernel(cas_kernel, (2,), z, cmp.view(np.float32), val.view(np.float32), old, K=2,
               BLOCK=block)
    swapped = 0
    for a in range(2):
        mine = np.arange(n) % 2 == a
        updates = list(zip(cmp[mine].tolist(), val[mine].tolist(), strict=True))
        olds = _bits(old)[mine].tolist()
        assert serializable(int(init[a]), updates, olds, int(_bits(z)[a]), _cas)
        swapped += sum(o == c and c != v for o, (c, v) in zip(olds, updates, strict=True))
    assert swapped > 4  # the data really exercises successful swaps
