"""NaNs that arithmetic produces, fed to ops that read a NaN's sign: the kernel and inputs
shared by scripts/cuda_reference/nan_sign.py (Triton's CUDA backend on the lent GPU) and
tests/e2e/test_nan_sign.py (msltrans on the simulator). Pure Triton: no msltrans import."""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice

OPS = ("mul", "add", "sub", "div", "fma", "sqrt", "plus0")
DTYPES = ("float32", "float16", "bfloat16")
N_FLOAT_ROWS = 4  # g, clamp(g, -100, 100), -g, |g|
N_INT_ROWS = 4    # clamp(...).to(int16), g.to(int32), signbit(g), copysign(1, g) > 0
BLOCK = 32

_INF = np.inf
_NAN_NEG = float(np.frombuffer(np.uint32(0xFFC01234).tobytes(), np.float32)[0])
# (x, y) pairs: invalid operations for every op, a negative-signed NaN operand, and ordinary
# values as a control. op(x, y): x*y, x+y, x-y, x/y, fma(x, y, x), sqrt(x), x + 0.
PAIRS = [(0.0, _INF), (-0.0, _INF), (_INF, -0.0), (_INF, -_INF), (-_INF, _INF), (_INF, _INF),
         (0.0, 0.0), (-0.0, 0.0), (-1.0, 2.0), (-_INF, 1.0), (_NAN_NEG, 1.0), (1.0, _NAN_NEG),
         (1.5, -2.0), (-3.0, 0.5), (-0.0, -0.0), (_INF, 0.0)]


def inputs() -> tuple[np.ndarray, np.ndarray]:
    """x, y as float32 (cast to the dtype under test; the NaN stays a NaN of the same sign)."""
    x = np.array([p[0] for p in PAIRS], np.float32)
    y = np.array([p[1] for p in PAIRS], np.float32)
    return x, y


@triton.jit
def nan_sign_kernel(x_ptr, y_ptr, f_ptr, i_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    if OP == "mul":
        g = x * y
    elif OP == "add":
        g = x + y
    elif OP == "sub":
        g = x - y
    elif OP == "div":
        g = x / y
    elif OP == "fma":
        g = tl.fma(x, y, x)
    elif OP == "sqrt":
        g = tl.sqrt(x.to(tl.float32)).to(x.dtype)
    else:
        g = x + 0.0
    c = tl.clamp(g, -100.0, 100.0)  # symmetric bounds: NVIDIA's min.xorsign.abs
    tl.store(f_ptr + offs, g, mask=m)
    tl.store(f_ptr + n + offs, c, mask=m)
    tl.store(f_ptr + 2 * n + offs, -g, mask=m)
    tl.store(f_ptr + 3 * n + offs, tl.abs(g), mask=m)
    tl.store(i_ptr + offs, c.to(tl.int16).to(tl.int32), mask=m)
    tl.store(i_ptr + n + offs, g.to(tl.float32).to(tl.int32), mask=m)
    tl.store(i_ptr + 2 * n + offs, libdevice.signbit(g.to(tl.float32)).to(tl.int32), mask=m)
    one = tl.full([BLOCK], 1.0, tl.float32)
    tl.store(i_ptr + 3 * n + offs, (libdevice.copysign(one, g.to(tl.float32)) > 0).to(tl.int32),
             mask=m)
