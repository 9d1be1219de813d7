"""Upstream-style atomics (test_core's test_atomic_rmw, test_atomic_rmw_predicate,
test_tensor_atomic_rmw, test_atomic_cas, test_tensor_atomic_cas, test_atomic_min_max_neg_zero),
written for this project. Many programs hit the same addresses; the reference is the
order-independent result (every op here is commutative), plus the set of returned old values.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from tests.conformance.upstream_style_support import require_metal_sim
from tests.support.run_kernel import run_kernel


@pytest.fixture(scope="module", autouse=True)
def _metal_sim() -> None:
    require_metal_sim()


@triton.jit
def _atomic_rmw(X, Z, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m)
    slot = Z + offs % 4  # four contended addresses
    if OP == "add":
        tl.atomic_add(slot, x, mask=m)
    elif OP == "max":
        tl.atomic_max(slot, x, mask=m)
    elif OP == "min":
        tl.atomic_min(slot, x, mask=m)
    elif OP == "and":
        tl.atomic_and(slot, x, mask=m)
    elif OP == "or":
        tl.atomic_or(slot, x, mask=m)
    else:
        tl.atomic_xor(slot, x, mask=m)


NP_RMW = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
          "or": np.bitwise_or, "xor": np.bitwise_xor}


RMW_CASES = [("add", "int32"), ("add", "uint32"), ("add", "float32"), ("max", "int32"),
             ("max", "uint32"), ("max", "float32"), ("min", "int32"), ("min", "uint32"),
             ("min", "float32"), ("and", "int32"), ("or", "uint32"), ("xor", "int32")]


def _rmw_data(op: str, dtype: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    if dtype == "float32":
        x = (rng.integers(-64, 64, n) / 8).astype(np.float32)  # dyadic: sums are exact
        return x, np.full(4, {"add": 0.0, "max": -1e30, "min": 1e30}[op], np.float32)
    lo, hi = (0, 2**31) if dtype.startswith("u") else (-(2**30), 2**30)
    x = rng.integers(lo, hi, n).astype(dtype)
    if op == "add":
        x //= 2**12  # no wrap on the way
    info = np.iinfo(dtype)
    init = {"add": 0, "max": info.min, "min": info.max, "and": -1 if info.min else info.max,
            "or": 0, "xor": 0}[op]
    return x, np.full(4, init, dtype=dtype)


@pytest.mark.parametrize("op, dtype", RMW_CASES)
def test_atomic_rmw_masked(op: str, dtype: str) -> None:
    n, block = 203, 64  # 4 programs; the tail of the last one is masked off
    x, z0 = _rmw_data(op, dtype, n)
    z = torch.from_numpy(z0.copy())
    _atomic_rmw[(triton.cdiv(n, block),)](torch.from_numpy(x), z, n, OP=op, BLOCK=block)
    ref = np.array([NP_RMW[op].reduce(np.concatenate([z0[k:k + 1], x[k::4]]))
                    for k in range(4)], dtype=dtype)
    np.testing.assert_array_equal(z.numpy(), ref)


@pytest.mark.parametrize(("op", "dtype"), [("add", torch.int64), ("xor", torch.int64),
                                         ("max", torch.uint64), ("min", torch.uint64)])
def test_atomic_rmw_64bit_unused_result(op: str, dtype: torch.dtype) -> None:
    """64-bit RMWs whose old value is unused: add/xor from two 32-bit atomics (the carry
    into the high word), unsigned max/min on atomic_ulong; values span the 64 bits."""
    rng = np.random.default_rng(2)
    x = rng.integers(0, 2**64, 203, dtype=np.uint64)
    z0 = rng.integers(0, 2**64, 4, dtype=np.uint64)
    if dtype == torch.int64:
        x, z0 = x.view(np.int64), z0.view(np.int64)
    z = torch.from_numpy(z0.copy()).to(dtype)
    _atomic_rmw[(4,)](torch.from_numpy(x).to(dtype), z, 203, OP=op, BLOCK=64)
    with np.errstate(over="ignore"):
        ref = np.array([NP_RMW[op].reduce(np.concatenate([z0[k:k + 1], x[k::4]]))
                        for k in range(4)], dtype=x.dtype)
    np.testing.assert_array_equal(z.numpy(), ref)


def test_atomic_rmw_64bit_signed_min_is_refused() -> None:
    """atomic_ulong compares unsigned: signed 64-bit max/min refuse, naming why and the fix."""
    x, z = torch.ones(64, dtype=torch.int64), torch.zeros(4, dtype=torch.int64)
    with pytest.raises(MetalNonRecoverableError, match=r"tt\.atomic_rmw.*64-bit.*unsigned"):
        _atomic_rmw[(1,)](x, z, 64, OP="min", BLOCK=64)


@triton.jit
def _atomic_old(X, Z, OLD, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    old = tl.atomic_add(Z + 0 * offs, tl.load(X + offs))  # one address, many lanes
    tl.store(OLD + offs, old)


def test_atomic_add_scalar_address_returns_distinct_olds() -> None:
    x = np.ones(256, np.int32)
    z, old = np.zeros(1, np.int32), np.zeros(256, np.int32)
    run_kernel(_atomic_old, (4,), x, z, old, BLOCK=64)
    assert z[0] == 256
    np.testing.assert_array_equal(np.sort(old), np.arange(256))  # each step seen once


@triton.jit
def _atomic_xchg(Z, OLD, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(OLD + offs, tl.atomic_xchg(Z + 0 * offs, offs + 1))


def test_atomic_xchg_chain() -> None:
    """Each exchange returns the value some other lane left: {0, 1..n} minus the final one."""
    z, old = np.zeros(1, np.int32), np.zeros(128, np.int32)
    run_kernel(_atomic_xchg, (2,), z, old, BLOCK=64)
    assert sorted(old.tolist() + [int(z[0])]) == list(range(129))


@triton.jit
def _spin_lock(LOCK, COUNT, ITERS: tl.constexpr):
    for _ in range(ITERS):
        while tl.atomic_cas(LOCK, 0, 1) == 1:
            pass
        c = tl.load(COUNT, volatile=False)
        tl.store(COUNT, c + 1)
        tl.atomic_xchg(LOCK, 0)


def test_atomic_cas_spin_lock() -> None:
    lock, count = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    _spin_lock[(8,)](lock, count, ITERS=3, num_warps=1)
    assert count.item() == 24 and lock.item() == 0


@triton.jit
def _tensor_cas(Z, CMP, VAL, OLD, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_cas(Z + offs, tl.load(CMP + offs), tl.load(VAL + offs))
    tl.store(OLD + offs, old)


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
def test_tensor_atomic_cas(dtype: str) -> None:
    z = np.arange(32, dtype=dtype)
    cmp = np.where(np.arange(32) % 3 == 0, np.arange(32), 999).astype(dtype)
    val = (np.arange(32) * 100).astype(dtype)
    z0, old = z.copy(), np.zeros(32, dtype)
    run_kernel(_tensor_cas, (1,), z, cmp, val, old, BLOCK=32)
    np.testing.assert_array_equal(old, z0)
    np.testing.assert_array_equal(z, np.where(cmp == z0, val, z0))


@triton.jit
def _atomic_neg_zero(Z, X, MAX: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if MAX:
        tl.atomic_max(Z + offs, tl.load(X + offs))
    else:
        tl.atomic_min(Z + offs, tl.load(X + offs))


@pytest.mark.parametrize("is_max", [False, True])
def test_atomic_min_max_signed_zero(is_max: bool) -> None:
    """-0.0 < +0.0 for the float atomics, as upstream's test_atomic_min_max_neg_zero expects."""
    z = torch.tensor([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 0.0, -0.0])
    x = torch.tensor([-0.0, 0.0, 0.0, -0.0, -0.0, 0.0, -2.0, 2.0])
    zs, xs = torch.signbit(z), torch.signbit(x)
    ref = torch.maximum(z, x) if is_max else torch.minimum(z, x)
    tie = (z == x) & (zs != xs)  # torch keeps either zero on a tie; the IR orders -0 < +0
    ref[tie] = 0.0 if is_max else -0.0
    _atomic_neg_zero[(1,)](z, x, MAX=is_max, BLOCK=8)
    assert torch.equal(z, ref) and torch.equal(torch.signbit(z), torch.signbit(ref))


def test_tensor_atomic_cas_64bit_is_refused() -> None:
    z = np.zeros(32, np.int64)
    with pytest.raises(MetalNonRecoverableError, match=r"tt\.atomic_cas.*64-bit"):
        run_kernel(_tensor_cas, (1,), z, z.copy(), z.copy(), z.copy(), BLOCK=32)
