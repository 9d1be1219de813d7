"""tt.atomic_rmw / tt.atomic_cas / tt.histogram through unmodified kernels, against numpy.

The simulator runs threadgroups one after another, but every test below is valid under any
interleaving on a real GPU: integer results are order-independent, float sums use values
whose sums are exact, old values are checked as permutations, and the spin lock is taken
across programs (never between lanes of one program).
"""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from msltrans.ir import read_module
from msltrans.lower import lower_module
from msltrans.toolchain import to_ttgir
from tests.support.run_kernel import compile_kernel, dispatch, run_kernel


@pytest.fixture(params=[None, 2, 3], ids=["exact-cas", "spurious-2", "spurious-3"])
def cas_spurious(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Also run with MSLTRANS_SIM_CAS_SPURIOUS=N (every Nth weak compare-exchange fails
    spuriously, docs/simulator.md): the CAS loops' retry paths run; results must not change."""
    if request.param is None:
        monkeypatch.delenv("MSLTRANS_SIM_CAS_SPURIOUS", raising=False)
    else:
        monkeypatch.setenv("MSLTRANS_SIM_CAS_SPURIOUS", str(request.param))


@triton.jit
def hist_kernel(x_ptr, hist_ptr, old_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    old = tl.atomic_add(hist_ptr + x, 1, mask=m)
    tl.store(old_ptr + offs, old, mask=m)


@pytest.mark.parametrize(("num_warps", "block"), [(1, 64), (4, 128), (8, 16)])
def test_integer_histogram_and_old_values(num_warps: int, block: int) -> None:
    # block=16 with 8 warps: every element is replicated 16x; each must count once.
    n, bins = 1001, 13
    x = np.random.default_rng(block).integers(0, bins, n).astype(np.int32)
    hist = np.zeros(bins, np.int32)
    old = np.full(n, -1, np.int32)
    run_kernel(hist_kernel, ((n + block - 1) // block,), x, hist, old, n,
               num_warps=num_warps, BLOCK=block)
    assert hist.tolist() == np.bincount(x, minlength=bins).tolist()
    for b in range(bins):  # the old values seen by one bin's updates are 0, 1, ..., count-1
        assert sorted(old[x == b].tolist()) == list(range(int((x == b).sum())))


@triton.jit
def float_add_kernel(x_ptr, idx_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(acc_ptr + tl.load(idx_ptr + offs, mask=m, other=0),
                  tl.load(x_ptr + offs, mask=m), mask=m, sem="relaxed")


def test_float_accumulation() -> None:
    n, bins = 3000, 7
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    idx = rng.integers(0, bins, n).astype(np.int32)
    acc = np.zeros(bins, np.float32)
    run_kernel(float_add_kernel, ((n + 255) // 256,), x, idx, acc, n, BLOCK=256)
    want = np.array([x[idx == b].astype(np.float64).sum() for b in range(bins)])
    np.testing.assert_allclose(acc, want, rtol=1e-4, atol=1e-4)


@triton.jit
def minmax_kernel(x_ptr, mx_ptr, mn_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.atomic_max(mx_ptr + offs % 4, x, mask=m)
    tl.atomic_min(mn_ptr + offs % 4, x, mask=m, sem="acquire", scope="cta")


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_int_max_min_signed_and_unsigned(dtype: type) -> None:
    n = 777
    rng = np.random.default_rng(2)
    if dtype is np.uint32:  # values past 2**31: wrong under a signed compare
        x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        mx, mn = np.zeros(4, dtype), np.full(4, 2**32 - 1, dtype)
    else:
        x = rng.integers(-(2**31), 2**31, n).astype(np.int32)
        mx, mn = np.full(4, -(2**31), dtype), np.full(4, 2**31 - 1, dtype)
    run_kernel(minmax_kernel, ((n + 127) // 128,), x, mx, mn, n, BLOCK=128)
    for k in range(4):
        assert mx[k] == x[k::4].max() and mn[k] == x[k::4].min()


def _float_key(bits: np.ndarray) -> np.ndarray:
    """Total order of Triton's fp32 max/min (signed-int max on sign 0, unsigned min on 1)."""
    b = bits.astype(np.int64)
    return np.where(b >> 31 == 0, b, (1 << 31) - 1 - b)


def test_float_max_min_bits() -> None:
    # Triton splits fp32 atomic_max into max on the bits (x >= +0) and umin (sign set):
    # -0.0 < +0.0, and NaNs order by their bits. The reference applies those integer ops.
    specials = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45],
                        np.float32)
    x = np.concatenate([specials, np.random.default_rng(4).standard_normal(300)
                        .astype(np.float32)])
    n = x.size
    init = np.array([-np.inf, np.inf, 0.0, -0.0], np.float32)
    for start in range(4):
        mx = np.full(4, init[start], np.float32)
        mn = np.full(4, init[start], np.float32)
        run_kernel(minmax_kernel, ((n + 127) // 128,), x, mx, mn, n, BLOCK=128)
        for k in range(4):
            bits = np.concatenate([[init[start]], x[k::4]]).view(np.uint32)
            key = _float_key(bits)
            assert mx[k:k + 1].view(np.uint32)[0] == bits[np.argmax(key)]
            assert mn[k:k + 1].view(np.uint32)[0] == bits[np.argmin(key)]


@triton.jit
def bitwise_xchg_kernel(x_ptr, and_ptr, or_ptr, xor_ptr, xchg_ptr, old_ptr, n,
                        BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.atomic_and(and_ptr + offs % 2, x, mask=m)
    tl.atomic_or(or_ptr + offs % 2, x, mask=m)
    tl.atomic_xor(xor_ptr + offs % 2, x, mask=m)
    old = tl.atomic_xchg(xchg_ptr + offs, x + 1, mask=m & (offs % 3 != 0))
    tl.store(old_ptr + offs, old, mask=m)


def test_bitwise_and_masked_xchg() -> None:
    n = 301
    x = np.random.default_rng(6).integers(-(2**31), 2**31, n).astype(np.int32)
    a, o, xr = np.full(2, -1, np.int32), np.zeros(2, np.int32), np.zeros(2, np.int32)
    xchg = np.arange(n, dtype=np.int32) * 7
    before = xchg.copy()
    old = np.full(n, 99, np.int32)
    run_kernel(bitwise_xchg_kernel, ((n + 63) // 64,), x, a, o, xr, xchg, old, n, BLOCK=64)
    for k in range(2):
        assert a[k] == np.bitwise_and.reduce(x[k::2])
        assert o[k] == np.bitwise_or.reduce(x[k::2])
        assert xr[k] == np.bitwise_xor.reduce(x[k::2])
    on = np.arange(n) % 3 != 0
    assert (xchg[on] == x[on] + 1).all() and (xchg[~on] == before[~on]).all()
    assert (old[on] == before[on]).all() and (old[~on] == 0).all()  # masked-off: 0


@triton.jit
def spin_lock_kernel(lock_ptr, counter_ptr, order_ptr):
    # A lock taken once per program (thread 0 spins; the result is uniform): valid on real
    # GPUs, where the holder is a running threadgroup that will release it.
    while tl.atomic_cas(lock_ptr, 0, 1, sem="acquire") == 1:
        pass
    v = tl.load(counter_ptr)  # a plain read-modify-write, serialised by the lock
    tl.store(counter_ptr, v + 1)
    tl.store(order_ptr + tl.program_id(0), v)
    tl.atomic_xchg(lock_ptr, 0, sem="release")


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.usefixtures("cas_spurious")
def test_cas_spin_lock_across_programs(num_warps: int) -> None:
    grid = 37
    lock, counter = np.zeros(1, np.int32), np.zeros(1, np.int32)
    order = np.full(grid, -1, np.int32)
    run_kernel(spin_lock_kernel, (grid,), lock, counter, order, num_warps=num_warps)
    assert counter[0] == grid and lock[0] == 0
    assert sorted(order.tolist()) == list(range(grid))


@triton.jit
def cas_tensor_kernel(p_ptr, cmp_ptr, old_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_cas(p_ptr + offs, tl.load(cmp_ptr + offs), offs + 1000)
    tl.store(old_ptr + offs, old)


@pytest.mark.usefixtures("cas_spurious")
def test_cas_tensor_returns_old() -> None:
    block = 64
    p = np.arange(block, dtype=np.int32) * 3
    cmp = np.where(np.arange(block) % 2 == 0, p, p + 1).astype(np.int32)
    before = p.copy()
    old = np.zeros(block, np.int32)
    run_kernel(cas_tensor_kernel, (1,), p, cmp, old, num_warps=2, BLOCK=block)
    even = np.arange(block) % 2 == 0
    assert (old == before).all()
    assert (p[even] == np.arange(block)[even] + 1000).all() and (p[~even] == before[~even]).all()


@triton.jit
def half_add_kernel(out_ptr, x_ptr, old_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + offs, mask=m)
    old = tl.atomic_add(out_ptr + offs, x, mask=m)
    tl.store(old_ptr + tl.program_id(0) * BLOCK + offs, old, mask=m)


def _run_16bit(dtype: str, out: np.ndarray, x: np.ndarray, old: np.ndarray, n: int,
               grid: int, block: int) -> None:
    sig = {"out_ptr": f"*{dtype}", "x_ptr": f"*{dtype}", "old_ptr": f"*{dtype}", "n": "i32"}
    program = lower_module(read_module(to_ttgir(half_add_kernel, sig, {"BLOCK": block}, 1)))
    dispatch(program, (grid,), (out, x, old, n))


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.usefixtures("cas_spurious")
def test_16bit_add_adjacent_elements(dtype: str) -> None:
    # Adjacent 16-bit elements share a 32-bit word: each update must leave the other alone.
    # Values are multiples of 1/4 with small sums: exact in fp16/bf16 in any order.
    grid, block, n = 5, 32, 29
    vals = np.random.default_rng(8).integers(-8, 9, (grid, block)) / 4.0
    if dtype == "fp16":
        x, out = vals.astype(np.float16), np.zeros(block, np.float16)
        old = np.full((grid, block), 7, np.float16)
        as_float = np.float32
    else:  # bf16 as the top half of fp32 bits
        x = (vals.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        out, old = np.zeros(block, np.uint16), np.full((grid, block), 7, np.uint16)
    _run_16bit(dtype, out, x, old, n, grid, block)

    def f(a: np.ndarray) -> np.ndarray:
        if dtype == "fp16":
            return a.astype(as_float)
        return (a.astype(np.uint32) << 16).view(np.float32)

    assert f(out)[:n].tolist() == vals[:, :n].sum(axis=0).tolist()
    assert (out[n:] == 0).all()
    # Old values chain in some serial order: {0} + {old + x} == {old} + {final}, per element.
    got_old = f(old)[:, :n]
    for c in range(n):
        lhs = sorted([0.0] + (got_old[:, c] + vals[:, c]).tolist())
        assert lhs == sorted(got_old[:, c].tolist() + [float(f(out)[c])])


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.usefixtures("cas_spurious")
def test_16bit_add_odd_length_buffer(dtype: str) -> None:
    # 33 elements = 66 bytes (not a multiple of 4); every element, first and last included,
    # is updated through the word CAS. The simulator stages a 66-byte buffer at an address
    # = 2 (mod 4) (its end touches the guard page), so its first element's word covers 2 bytes
    # of padding before it (no fault) and its last element's word ends with it (docs/atomics.md).
    grid, n = 3, 33
    vals = np.random.default_rng(9).integers(-8, 9, (grid, 64)) / 4.0
    if dtype == "fp16":
        x, out = vals.astype(np.float16), np.zeros(n, np.float16)
        old = np.zeros((grid, 64), np.float16)
    else:
        x = (vals.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        out, old = np.zeros(n, np.uint16), np.zeros((grid, 64), np.uint16)
    _run_16bit(dtype, out, x, old, n, grid, 64)
    if dtype == "fp16":
        total = out.astype(np.float32)
    else:
        total = (out.astype(np.uint32) << 16).view(np.float32)
    assert total.tolist() == vals[:, :n].sum(axis=0).tolist()


@triton.jit
def tl_hist_kernel(x_ptr, out_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    h = tl.histogram(x, BINS, mask=offs < n)
    tl.store(out_ptr + tl.arange(0, BINS), h)


@pytest.mark.parametrize(("bins", "num_warps"), [(8, 1), (64, 4), (256, 2)])
def test_tl_histogram(bins: int, num_warps: int) -> None:
    # Values out of [0, bins) included: NVIDIA's lowering bins x & (max(bins, 32) - 1).
    block, n = 128, 113
    x = np.random.default_rng(bins).integers(-40, bins + 40, block).astype(np.int32)
    out = np.full(bins, -1, np.int32)
    run_kernel(tl_hist_kernel, (1,), x, out, n, num_warps=num_warps, BINS=bins, BLOCK=block)
    b = x[:n].astype(np.int64) & (max(bins, 32) - 1)
    assert out.tolist() == np.bincount(b[b < bins], minlength=bins)[:bins].tolist()


@triton.jit
def scope_kernel(p_ptr, SCOPE: tl.constexpr):
    tl.atomic_add(p_ptr, 1, scope=SCOPE)


def test_refusals() -> None:
    with pytest.raises(MetalNonRecoverableError, match="system-scope.*scope='gpu'"):
        compile_kernel(scope_kernel, (np.zeros(1, np.int32),), 1, SCOPE="sys")
    with pytest.raises(MetalNonRecoverableError, match="system-scope"):  # 64-bit too
        compile_kernel(scope_kernel, (np.zeros(1, np.int64),), 1, SCOPE="sys")


@triton.jit
def cas16_kernel(q_ptr, cmp_ptr, old_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    new = tl.load(old_ptr + offs)  # old_ptr holds the new values on entry
    tl.store(old_ptr + offs, tl.atomic_cas(q_ptr + offs, tl.load(cmp_ptr + offs), new))


@pytest.mark.parametrize("dtype", [np.float16, np.int16])
@pytest.mark.usefixtures("cas_spurious")
def test_16bit_cas_adjacent_elements(dtype: type) -> None:
    # Both halves of a 32-bit word are swapped (or not) independently.
    block = 32
    i = np.arange(block)
    q = (i * 5 - 40).astype(dtype)
    cmp = np.where(i % 3 == 0, q, q + 1).astype(dtype)
    new = (-i - 1).astype(dtype)
    q0, old = q.copy(), new.copy()
    run_kernel(cas16_kernel, (1,), q, cmp, old, num_warps=1, BLOCK=block)
    hit = i % 3 == 0
    assert old.tobytes() == q0.tobytes()
    assert (q[hit] == new[hit]).all() and (q[~hit] == q0[~hit]).all()


@triton.jit(noinline=True)
def take_ticket(counter_ptr, step):
    return tl.atomic_add(counter_ptr, step)


@triton.jit
def ticket_kernel(counter_ptr, out_ptr, REPEAT: tl.constexpr):
    # A scalar atomic (thread 0 + broadcast through scratch) in a noinline helper in a loop.
    for i in range(REPEAT):
        t = take_ticket(counter_ptr, 1)
        tl.store(out_ptr + tl.program_id(0) * REPEAT + i, t)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_scalar_atomic_in_helper_in_loop(num_warps: int) -> None:
    grid, repeat = 6, 3
    counter = np.zeros(1, np.int32)
    out = np.full(grid * repeat, -1, np.int32)
    prog = run_kernel(ticket_kernel, (grid,), counter, out, num_warps=num_warps, REPEAT=repeat)
    assert "helper" in prog.source and counter[0] == grid * repeat
    assert sorted(out.tolist()) == list(range(grid * repeat))
    # Within a program, tickets increase (each is taken after the previous one returned).
    assert all((np.diff(out.reshape(grid, repeat), axis=1) > 0).ravel())
