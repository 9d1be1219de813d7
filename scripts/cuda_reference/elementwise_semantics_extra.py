"""More target-defined cases, recorded like elementwise_semantics.py (run on the lent H200):
    PYTHONPATH=. python scripts/cuda_reference/elementwise_semantics_extra.py OUT.npz
int → bf16 rounding (one rounding or two via f32), float `%` with large quotients, shift
amounts that are negative or >= 2**32, whether bf16/f16 a*b+c is fused, abs(INT_MIN),
64-bit and 16-bit division by zero, f16/bf16 min/max with NaN and zeros, tl.clamp.
"""

from __future__ import annotations

import sys

import numpy as np
import torch
import triton.language as tl
from elementwise_semantics import (
    DEV,
    MINMAX_A,
    MINMAX_B,
    _binary_kernel,
    _cast_kernel,
    _run,
    save,
)

from msltrans.workloads.elementwise_kernels import clamp_kernel, muladd_kernel

_binary = _binary_kernel  # rem, div, abs, min/max (±NaN), clamp to ±b, shl, shr




def main(path: str) -> None:
    rec: dict[str, np.ndarray] = {}
    for dt, tdt in (("int32", torch.int32), ("int64", torch.int64), ("uint32", torch.uint32),
                    ("uint64", torch.uint64)):
        bits = np.iinfo(dt).bits
        top = bits - 2 if dt.startswith("int") else bits - 1
        vals = [2**top + 2**(top - 8) + 1, 2**top + 2**(top - 8) - 1, 2**30 + 2**22 + 1,
                2**24 + 1, 2**25 + 3, 16777217, 2**31 - 1]
        if dt.startswith("int"):
            vals += [-v for v in vals]
        raw = np.array([v % 2**bits for v in vals], dtype=f"uint{bits}")
        rec[f"tobf16_{dt}_in"] = raw
        x = torch.from_numpy(raw.view(f"int{bits}")).to(DEV).view(tdt)
        bf = _run(_cast_kernel, [x], torch.bfloat16, DST=tl.bfloat16)
        rec[f"tobf16_{dt}"] = bf.view(torch.int16).numpy()
    a = np.array([1e10, -1e10, 3.4e38, 1e30, 123456789.0, 7.5, -7.5, 5.0, 1.0, np.inf, 2.0],
                 np.float32)
    b = np.array([3.3, 3.3, 1.1, 7.0, 0.1, 2.0, 2.0, np.inf, 0.0, 2.0, -0.0], np.float32)
    rec["frem_a"], rec["frem_b"] = a, b
    rec["frem_float32"] = _run(_binary, [torch.tensor(a, device=DEV),
                                         torch.tensor(b, device=DEV)], torch.float32,
                               OP="rem").numpy()
    for dt, tdt in (("int8", torch.int8), ("int16", torch.int16), ("int32", torch.int32),
                    ("int64", torch.int64)):
        info = np.iinfo(dt)
        sa = np.array([-3, 5, -3, 5, -3, 5] + ([-3, 5, -3] if dt == "int64" else []), dt)
        sb = np.array([-1, -1, info.min, info.min, -100 if info.bits > 8 else -100, 1]
                      + ([2**32, 2**32 + 1, 2**40] if dt == "int64" else []), dt)
        rec[f"shift2_{dt}_a"], rec[f"shift2_{dt}_b"] = sa, sb
        ta, tb = torch.from_numpy(sa).to(DEV), torch.from_numpy(sb).to(DEV)
        for op in ("shl", "shr"):
            rec[f"{op}2_{dt}"] = _run(_binary, [ta, tb], tdt, OP=op).numpy()
    rng = np.random.default_rng(0)
    fa = rng.standard_normal(4096).astype(np.float32)
    fb = rng.standard_normal(4096).astype(np.float32)
    fc = (-(fa.astype(np.float64) * fb) * (1 + rng.standard_normal(4096) * 1e-2)).astype(
        np.float32)
    for name, tdt in (("float16", torch.float16), ("bfloat16", torch.bfloat16)):
        ins = [torch.tensor(v, device=DEV).to(tdt) for v in (fa, fb, fc)]
        rec[f"muladd_{name}_in"] = np.stack([t.cpu().view(torch.int16).numpy() for t in ins])
        rec[f"muladd_{name}"] = _run(muladd_kernel, ins, tdt).view(torch.int16).numpy()
    for dt, tdt in (("int8", torch.int8), ("int16", torch.int16), ("int32", torch.int32),
                    ("int64", torch.int64)):
        info = np.iinfo(dt)
        x = torch.tensor([int(info.min), -1, 0, int(info.max)], dtype=tdt, device=DEV)
        rec[f"abs_{dt}"] = _run(_binary, [x, x], tdt, OP="abs").numpy()
    for dt, tdt, vals in (("int64", torch.int64, [2**32, 2**32 + 5, -(2**32), 2**40, -1]),
                          ("uint64", torch.uint64, [2**32, 2**32 + 5, 2**63, 2**40, 1]),
                          ("uint16", torch.uint16, [0, 5, 65535, 32768, 1]),
                          ("int16", torch.int16, [0, 5, -5, -32768, 32767])):
        bits = np.iinfo(dt).bits
        raw = np.array([v % 2**bits for v in vals], dtype=f"uint{bits}")
        rec[f"divzero_{dt}_a"] = raw.view(dt)
        a_t = torch.from_numpy(raw.view(f"int{bits}")).to(DEV).view(tdt)
        z = torch.zeros_like(a_t)
        for op in ("div", "rem"):
            out = _run(_binary, [a_t, z], tdt, OP=op)
            rec[f"divzero_{op}_{dt}"] = out.view({8: torch.int8, 16: torch.int16, 32: torch.int32,
                                                  64: torch.int64}[bits]).numpy()
    for name, tdt in (("float16", torch.float16), ("bfloat16", torch.bfloat16)):
        ta, tb = (torch.tensor(v, device=DEV).to(tdt) for v in (MINMAX_A, MINMAX_B))
        for op in ("min", "max", "min_nan", "max_nan"):
            rec[f"{op}_{name}"] = _run(_binary, [ta, tb], tdt, OP=op).view(torch.int16).numpy()
    cx = np.array([np.nan, -0.0, 0.0, 5.0, -5.0, 0.5, -0.0, 0.0, 3.0], np.float32)
    cb = np.array([1.0, 0.0, 0.0, 2.0, 2.0, np.nan, -0.0, -0.0, np.inf], np.float32)
    rec["clamp_x"], rec["clamp_b"] = cx, cb
    rec["clamp_float32"] = _run(_binary, [torch.tensor(cx, device=DEV),
                                          torch.tensor(cb, device=DEV)], torch.float32,
                                OP="clamp").numpy()
    x3 = np.array([np.nan, -0.0, 0.0, 5.0, -5.0, 0.5, -0.0, 0.0, 3.0, 1.0, np.nan, 0.0],
                  np.float32)
    lo3 = np.array([-1.0, -0.0, -0.0, -1.0, -1.0, np.nan, 0.0, 0.0, 4.0, np.nan, 0.0, 0.0],
                   np.float32)
    hi3 = np.array([3.0, 0.0, 0.0, 3.0, 3.0, 1.0, 0.0, -0.0, 1.0, np.nan, np.nan, -0.0],
                   np.float32)
    rec["clamp3_x"], rec["clamp3_lo"], rec["clamp3_hi"] = x3, lo3, hi3
    out3 = torch.empty(4 * len(x3), device=DEV)  # the kernel's fourth output is not recorded
    clamp_kernel[(1,)](*(torch.tensor(v, device=DEV) for v in (x3, lo3, hi3)), out3, len(x3),
                       BLOCK=128)
    rec["clamp3_float32"] = out3.cpu().numpy().reshape(4, len(x3))[:3]
    save(path, rec)


if __name__ == "__main__":
    main(sys.argv[1])
