"""Bugs Triton's own unit tests found (docs/conformance.md), each pinned by a small kernel."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from msltrans.ir.types import PointerType, ScalarType, parse_type

pytestmark = pytest.mark.usefixtures("sim_driver_only")


@triton.jit
def _negative_constant(X, s):
    # MLIR names this constant `%c-7_i32`: the module-text reader must match the `-`.
    tl.store(X + tl.program_id(0), s * -7)


def test_ssa_names_with_a_minus_sign() -> None:
    x = torch.zeros(2, dtype=torch.int32)
    _negative_constant[(2,)](x, 3)
    assert x.tolist() == [-21, -21]


@triton.jit
def _copy_from_const(in_ptr: tl.const, out, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(out + o, tl.load(in_ptr + o))


def test_const_pointer_arguments() -> None:
    x = torch.arange(128, dtype=torch.float32) - 64.5
    out = torch.zeros(128)
    _copy_from_const[(1,)](x, out, B=128)
    assert torch.equal(out, x)


def test_const_pointer_type_parses() -> None:
    t = parse_type('!tt.ptr<f32, "constant">')
    assert t == PointerType(ScalarType("f32"), "constant")
    assert str(t) == '!tt.ptr<f32, "constant">'
    assert parse_type("!tt.ptr<i8, 1>") == PointerType(ScalarType("i8"), 1)


# ---- test_if_call[attribute_jit]: a scalar store by thread 0 overtook the other threads'
# earlier scalar load of the same address (the load then fed an address: out of bounds).

@triton.jit
def _load_then_store_scalar(Out, Idx):
    o = tl.load(Out)
    tl.store(Idx, tl.load(Out + o))  # every thread reads Out[o]; o must be the old value
    tl.store(Out, o + 1)


@triton.jit
def _store_then_load_scalar(P, Out, BLOCK: tl.constexpr):
    tl.store(P, 5)
    v = tl.load(P)  # every thread must see the store above, in any schedule
    tl.store(Out + tl.arange(0, BLOCK), tl.zeros([BLOCK], tl.int32) + v)


def _launch_every_schedule(fn, grid, args, num_warps, **constexprs):
    from msltrans.sim import check_races, compile_shader
    from tests.support.run_kernel import compile_kernel

    program = compile_kernel(fn, args, num_warps, **constexprs)
    kernel = getattr(compile_shader(program.source), program.kernel_name)
    t = program.threads_per_group
    # forward, reverse and shuffled thread orders must give the same bytes
    engine_args = program.engine_args(args)
    check_races(kernel, *engine_args, threads=(grid * t, 1, 1), group_size=(t, 1, 1),
                arg_casts=program.arg_casts)
    kernel(*engine_args, threads=(grid * t, 1, 1), group_size=(t, 1, 1),
           arg_casts=program.arg_casts, schedule="reverse")
    return program


@pytest.mark.parametrize("num_warps", [1, 4])
def test_scalar_store_waits_for_earlier_loads(num_warps: int) -> None:
    import numpy as np

    out = np.zeros(1, dtype=np.int32)
    idx = np.full(1, -1, dtype=np.int32)
    program = _launch_every_schedule(_load_then_store_scalar, 1, (out, idx), num_warps)
    assert out.tolist() == [1] and idx.tolist() == [0]
    assert "earlier accesses by other threads" in program.source


@pytest.mark.parametrize("num_warps", [1, 4])
def test_scalar_load_sees_an_earlier_scalar_store(num_warps: int) -> None:
    import numpy as np

    p = np.zeros(1, dtype=np.int32)
    out = np.zeros(32 * num_warps, dtype=np.int32)
    _launch_every_schedule(_store_then_load_scalar, 1, (p, out), num_warps, BLOCK=out.size)
    assert p.tolist() == [5] and out.tolist() == [5] * out.size


@triton.jit
def _independent_buffers(X, Y):
    tl.store(Y, tl.load(X) + 1)


def test_scalar_store_to_an_unread_buffer_has_no_barrier() -> None:
    import numpy as np

    from tests.support.run_kernel import run_kernel

    x, y = np.array([41], dtype=np.int32), np.zeros(1, dtype=np.int32)
    program = run_kernel(_independent_buffers, (1,), x, y)
    assert y.tolist() == [42]
    assert "threadgroup_barrier" not in program.source


# ---- test_flip[...-1] (test_standard.py): a #linear layout kept on the size-1 dim of an
# expand_dims was decoded for its parent's shape, so broadcasts read the wrong registers.

@triton.jit
def _flip_with_unit_dims(X, Z, M: tl.constexpr, N: tl.constexpr, DIM: tl.constexpr):
    offs = (tl.arange(0, M)[:, None, None] * N + tl.arange(0, N)[None, :, None]
            + tl.arange(0, 1)[None, None, :])
    tl.store(Z + offs, tl.flip(tl.load(X + offs), DIM))


@triton.jit
def _sum_keepdims_broadcast(X, Z, M: tl.constexpr, AX: tl.constexpr):
    offs = (tl.arange(0, M)[:, None, None] * 8 + tl.arange(0, 8)[None, :, None]
            + tl.arange(0, 1)[None, None, :])
    y = tl.reshape(tl.load(X + offs), (M, 2, 2, 2, 1))
    tl.store(Z + offs, tl.reshape(y - tl.sum(y, AX, keep_dims=True), (M, 8, 1)))


@pytest.mark.parametrize("m, n, dim, num_warps", [(128, 8, 0, 8), (128, 8, 1, 1), (4, 8, 1, 1),
                                                  (16, 32, 1, 4), (2, 2, 0, 1)])
def test_flip_with_a_trailing_unit_dim(m: int, n: int, dim: int, num_warps: int) -> None:
    g = torch.Generator().manual_seed(m * n + dim)
    x = torch.randint(-2**31, 2**31 - 1, (m, n, 1), generator=g, dtype=torch.int32)
    z = torch.empty_like(x)
    _flip_with_unit_dims[(1,)](x, z, m, n, dim, num_warps=num_warps)
    assert torch.equal(z, torch.flip(x, (dim,)))


@pytest.mark.parametrize("m, ax, num_warps", [(4, 1, 1), (4, 3, 1), (128, 2, 4), (1, 1, 1)])
def test_keepdims_reduction_broadcast_on_five_dims(m: int, ax: int, num_warps: int) -> None:
    g = torch.Generator().manual_seed(m + ax)
    x = torch.randn((m, 8, 1), generator=g).to(torch.float16)
    z = torch.empty_like(x)
    _sum_keepdims_broadcast[(1,)](x, z, m, ax, num_warps=num_warps)
    y = x.reshape(m, 2, 2, 2, 1)
    # f16 arithmetic: each op is the exact result (exact in float64) rounded once to f16
    s = y.double().sum(ax, keepdim=True).half()
    want = (y.double() - s.double()).half().reshape(m, 8, 1)
    assert torch.equal(z, want)


@triton.jit()
def _double_in_place(in_out_ptr):
    pid = tl.program_id(axis=0)
    x = tl.load(in_out_ptr + pid)
    out = x * 2
    tl.store(in_out_ptr + pid, out)


def test_load_store_same_ptr_one_launch() -> None:
    """Upstream test_load_store_same_ptr's kernel and launch (65536 programs, num_warps=32:
    every one of 1024 threads loads the scalar, one stores it), run once instead of 1000 times.
    A store that some thread's load sees before the others have loaded would leave 4s."""
    x = torch.ones((65536,), dtype=torch.float32)
    _double_in_place[(65536,)](x, num_warps=32)
    assert torch.all(x == 2)
