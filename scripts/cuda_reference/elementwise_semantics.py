"""Record what Triton's own CUDA backend computes where the IR leaves results to the target.

Run on a machine with an NVIDIA GPU (the project's lent H200):
    python scripts/cuda_reference/elementwise_semantics.py OUT.npz
The .npz is committed under tests/data/cuda/ and the differential tests compare msltrans's
results against it: float->int conversions of NaN/±inf/out-of-range values, integer
division and remainder by zero and INT_MIN / -1, shifts by >= the bit width, rounding of
fp32 -> fp16/bf16 (rtne and rtz), min/max with NaN and signed zeros, fma, int64 -> fp32.
"""

from __future__ import annotations

import sys

import numpy as np
import torch
import triton
import triton.language as tl

DEV = "cuda"


@triton.jit
def _cast_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x.to(DST), mask=m)


@triton.jit
def _cast_rtz_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x.to(DST, fp_downcast_rounding="rtz"), mask=m)


@triton.jit
def _binary_kernel(a_ptr, b_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    if OP == "div":
        r = a // b
    elif OP == "rem":
        r = a % b
    elif OP == "shl":
        r = a << b
    elif OP == "shr":
        r = a >> b
    elif OP == "min":
        r = tl.minimum(a, b)
    elif OP == "max":
        r = tl.maximum(a, b)
    elif OP == "min_nan":
        r = tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "max_nan":
        r = tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "abs":  # elementwise_semantics_extra.py's ops: unary abs of `a`, clamp to ±b
        r = tl.abs(a)
    elif OP == "clamp":
        r = tl.clamp(a, -b, b)
    else:
        r = a + b
    tl.store(out_ptr + offs, r, mask=m)


@triton.jit
def _fma_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    c = tl.load(c_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.fma(a, b, c), mask=m)


TORCH = {"int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
         "uint8": torch.uint8, "uint16": torch.uint16, "uint32": torch.uint32,
         "uint64": torch.uint64, "float16": torch.float16, "bfloat16": torch.bfloat16,
         "float32": torch.float32}
TL = {"int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64, "uint8": tl.uint8,
      "uint16": tl.uint16, "uint32": tl.uint32, "uint64": tl.uint64, "float16": tl.float16,
      "bfloat16": tl.bfloat16, "float32": tl.float32}


def _run(kernel, inputs, out_dtype, **kw):
    """Launch an elementwise kernel over inputs[0]'s length; out_dtype: a name or torch dtype."""
    n = inputs[0].numel()
    dtype = TORCH[out_dtype] if isinstance(out_dtype, str) else out_dtype
    out = torch.empty(n, dtype=dtype, device=DEV)
    kernel[(triton.cdiv(n, 128),)](*inputs, out, n, BLOCK=128, **kw)
    torch.cuda.synchronize()
    return out.cpu()


def _np(t: torch.Tensor) -> np.ndarray:
    """Raw bits for bf16 (numpy has none), values otherwise."""
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy()
    if t.dtype in (torch.uint16, torch.uint32, torch.uint64):
        return t.view({torch.uint16: torch.int16, torch.uint32: torch.int32,
                       torch.uint64: torch.int64}[t.dtype]).numpy().view(
            {torch.uint16: np.uint16, torch.uint32: np.uint32, torch.uint64: np.uint64}[t.dtype])
    return t.numpy()


def _wrap(vals: list[int], dt: str) -> np.ndarray:
    """Python ints wrapped modulo 2**bits into dtype `dt` (C-style conversion)."""
    bits = np.iinfo(dt).bits
    raw = np.array([v % (1 << bits) for v in vals], dtype=f"uint{bits}")
    return raw.view(dt)


def _to_dev(x: np.ndarray, dt: str) -> torch.Tensor:
    bits = np.iinfo(dt).bits
    return torch.tensor(x.view(f"int{bits}"), device=DEV).view(TORCH[dt])


def float_specials() -> np.ndarray:
    v = [0.0, -0.0, 0.4, 0.5, 0.6, 1.5, -0.5, -1.5, -1.0, 1.0, 126.9, 127.5, 128.0, 255.5,
         256.0, -128.5, -129.0, 32767.5, 32768.0, 65535.5, 65536.0, -32769.0, 2.0**31 - 128,
         2.0**31, -(2.0**31), -(2.0**31) - 256, 2.0**32, 2.0**32 - 256, 2.0**63, -(2.0**63),
         2.0**64, 1e30, -1e30, np.inf, -np.inf, np.nan, -np.nan, 3.4e38, 1e-45, -1e-45, 1.1e-38]
    return np.array(v, dtype=np.float32)


# min/max operands: NaN on either side and both, signed zeros both ways round
MINMAX_A = np.array([0.0, -0.0, np.nan, 1.0, np.nan, -np.inf, 2.0, -0.0], dtype=np.float32)
MINMAX_B = np.array([-0.0, 0.0, 1.0, np.nan, np.nan, np.inf, np.nan, -0.0], dtype=np.float32)


def save(path: str, rec: dict[str, np.ndarray]) -> None:
    """Write the record with the Triton version and device it was measured with."""
    rec["meta_triton_version"] = np.array(triton.__version__)
    rec["meta_device"] = np.array(torch.cuda.get_device_name())
    np.savez_compressed(path, **rec)
    print(f"wrote {len(rec)} arrays to {path}")


def main(path: str) -> None:
    rec: dict[str, np.ndarray] = {}
    xf = float_specials()
    rec["cast_in_float32"] = xf
    for src in ("float32", "float16", "bfloat16"):
        x = torch.tensor(xf, device=DEV).to(TORCH[src])
        rec[f"cast_in_{src}_bits"] = _np(x.cpu()) if src == "bfloat16" else x.cpu().numpy()
        for dst in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
            rec[f"cast_{src}_to_{dst}"] = _np(_run(_cast_kernel, [x], dst, DST=TL[dst]))
    for dst in ("float16", "bfloat16"):
        x = torch.tensor(xf, device=DEV)
        rec[f"cast_float32_to_{dst}_rtne"] = _np(_run(_cast_kernel, [x], dst, DST=TL[dst]))
        rec[f"cast_float32_to_{dst}_rtz"] = _np(_run(_cast_rtz_kernel, [x], dst, DST=TL[dst]))
    rng = np.random.default_rng(0)
    xr = (rng.standard_normal(4096) * 3).astype(np.float32)
    rec["round_in_float32"] = xr
    for dst in ("float16", "bfloat16"):
        x = torch.tensor(xr, device=DEV)
        rec[f"round_float32_to_{dst}_rtne"] = _np(_run(_cast_kernel, [x], dst, DST=TL[dst]))
        rec[f"round_float32_to_{dst}_rtz"] = _np(_run(_cast_rtz_kernel, [x], dst, DST=TL[dst]))
    i64 = np.array([2**53 + 1, 2**62 + 2**38 + 1, -(2**63), 2**63 - 1, -(2**31) - 1, 16777217,
                    -16777217, 2**24 + 3], dtype=np.int64)
    rec["i64_in"] = i64
    rec["cast_int64_to_float32"] = _np(_run(_cast_kernel, [torch.tensor(i64, device=DEV)],
                                            "float32", DST=tl.float32))
    u64 = np.array([2**64 - 1, 2**63 + 2**39 + 1, 2**63, 2**32 + 1], dtype=np.uint64)
    rec["u64_in"] = u64
    rec["cast_uint64_to_float32"] = _np(_run(
        _cast_kernel, [torch.tensor(u64.view(np.int64), device=DEV).view(torch.uint64)],
        "float32", DST=tl.float32))
    for dt in ("int32", "int64", "uint32", "int8", "uint8", "int16", "uint64"):
        info = np.iinfo(dt)
        a = [7, -7, 7, -7, int(info.min), int(info.min), int(info.max), 0, 5, int(info.min), 13,
             -13]
        b = [2, 2, -2, -2, -1, 0, 0, 0, 3, 1, 0, 0]
        sh = [0, 1, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 100]
        sa = [-3 if info.min < 0 else int(info.max) - 2] * len(sh)
        pairs = {"divrem": (a, b), "shift": (sa, sh)}
        for kind, (xa, xb) in pairs.items():
            a_np, b_np = _wrap(xa, dt), _wrap(xb, dt)
            rec[f"{kind}_{dt}_a"], rec[f"{kind}_{dt}_b"] = a_np, b_np
            ta, tb = _to_dev(a_np, dt), _to_dev(b_np, dt)
            for op in (("div", "rem") if kind == "divrem" else ("shl", "shr")):
                rec[f"{op}_{dt}"] = _np(_run(_binary_kernel, [ta, tb], dt, OP=op))
    fa, fb = MINMAX_A, MINMAX_B
    rec["minmax_a"], rec["minmax_b"] = fa, fb
    for op in ("min", "max", "min_nan", "max_nan"):
        rec[f"{op}_float32"] = _np(_run(_binary_kernel, [torch.tensor(fa, device=DEV),
                                                         torch.tensor(fb, device=DEV)],
                                        "float32", OP=op))
    a = rng.standard_normal(4096).astype(np.float32)
    b = rng.standard_normal(4096).astype(np.float32)
    c = (-(a.astype(np.float64) * b) * (1 + rng.standard_normal(4096) * 1e-6)).astype(np.float32)
    rec["fma_a"], rec["fma_b"], rec["fma_c"] = a, b, c
    ins = [torch.tensor(v, device=DEV) for v in (a, b, c)]
    out = torch.empty(4096, device=DEV)
    _fma_kernel[(32,)](*ins, out, 4096, BLOCK=128)
    rec["fma_float32"] = out.cpu().numpy()
    save(path, rec)


if __name__ == "__main__":
    main(sys.argv[1])
