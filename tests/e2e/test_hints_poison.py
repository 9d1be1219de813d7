"""llvm.intr.assume (tl.assume) → a comment; ub.poison → zero where any value is correct,
refused where it is not (address, condition, divisor)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from tests.support.run_kernel import compile_ttgir, dispatch, run_kernel
from tests.support.ttgir_gen import elementwise_kernel_1d, module_header, write


@triton.jit
def assume_kernel(out_ptr, N: tl.constexpr, BLOCK_N: tl.constexpr):
    current_size = N - tl.program_id(0) * BLOCK_N
    tl.assume(current_size >= BLOCK_N)
    if current_size >= 128:
        tl.store(out_ptr + tl.program_id(0), current_size)
    else:
        tl.store(out_ptr + tl.program_id(0), current_size + 101024)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_assume_is_a_comment(num_warps: int) -> None:
    out = np.zeros(1024 // 128, np.float32)
    program = run_kernel(assume_kernel, (1024 // 128,), out, num_warps=num_warps,
                         N=1024, BLOCK_N=128)
    assert "optimisation hint only" in program.source
    np.testing.assert_array_equal(out, 1024 - np.arange(8, dtype=np.float32) * 128)


@triton.jit
def assume_tensor_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.assume(n > 0)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) * 3, mask=m)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float32])
def test_assume_with_data(dtype: type) -> None:
    n = 333
    x = np.arange(n).astype(dtype) - 100
    out = np.zeros(n, dtype)
    run_kernel(assume_tensor_kernel, (3,), x, out, n, num_warps=4, BLOCK=128)
    assert out.tobytes() == (x * 3).astype(dtype).tobytes()


@triton.jit
def return_poison(x):
    a = False
    if a:
        return x


@triton.jit
def poison_kernel(Out):
    zero = 0
    tl.store(Out, return_poison(zero))


def test_poison_stored_becomes_zero() -> None:
    out = np.full(1, 7, np.int32)
    program = run_kernel(poison_kernel, (1,), out, num_warps=1)
    assert "ub.poison" in program.source
    assert out[0] == 0  # any value is correct; ours is zero


@pytest.mark.parametrize(("ty", "dtype"), [("i64", np.int64), ("f16", np.float16),
                                           ("i8", np.int8)])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_poison_tensor_through_arith_to_store(tmp_path: Path, ty: str, dtype: type,
                                              num_warps: int) -> None:
    add = "arith.addf" if ty.startswith("f") else "arith.addi"
    body = f"""
    %pz = ub.poison : tensor<256x{ty}, #L>
    %res = {add} %x0, %pz : tensor<256x{ty}, #L>"""
    text = elementwise_kernel_1d(256, num_warps, [ty], ty, body)
    program = compile_ttgir(write(tmp_path, "pz", text))
    n = 201
    x = (np.arange(n) - 50).astype(dtype)
    out = np.zeros(n, dtype)
    dispatch(program, (1,), (x, out, n))
    assert out.tobytes() == x.tobytes()  # x + (poison chosen as zero)


def _poison_address_kernel() -> str:
    return f"""{module_header(1)} {{
  tt.func public @k(%out: !tt.ptr<i32>) {{
    %c = arith.constant 1 : i32
    %p = ub.poison : !tt.ptr<i32>
    tt.store %p, %c : !tt.ptr<i32>
    tt.return
  }}
}}
"""


def _poison_condition_kernel() -> str:
    return f"""{module_header(1)} {{
  tt.func public @k(%out: !tt.ptr<i32>) {{
    %c = arith.constant 1 : i32
    %b = ub.poison : i1
    scf.if %b {{
      tt.store %out, %c : !tt.ptr<i32>
    }}
    tt.return
  }}
}}
"""


def _poison_divisor_kernel() -> str:
    return f"""{module_header(1)} {{
  tt.func public @k(%out: !tt.ptr<i32>) {{
    %c = arith.constant 1 : i32
    %d = ub.poison : i32
    %q = arith.divsi %c, %d : i32
    tt.store %out, %q : !tt.ptr<i32>
    tt.return
  }}
}}
"""


@pytest.mark.parametrize("make", [_poison_address_kernel, _poison_condition_kernel,
                                  _poison_divisor_kernel])
def test_poison_refused_where_a_value_matters(tmp_path: Path, make) -> None:  # noqa: ANN001
    with pytest.raises(MetalNonRecoverableError, match="ub.poison used as"):
        compile_ttgir(write(tmp_path, "bad", make()))
