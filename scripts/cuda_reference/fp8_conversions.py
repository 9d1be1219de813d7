"""Record what Triton's CUDA backend does for fp8 conversions (run on the lent H200):
    PYTHONPATH=. python scripts/cuda_reference/fp8_conversions.py OUT.npz
Downcasts f32 / f16 / bf16 -> f8E4M3FN (tl.float8e4nv) and f8E5M2 (tl.float8e5) with
rounding rtne and rtz: f16 and bf16 over all 65,536 bit patterns, f32 over a value set built
around every fp8 value (itself, its f32 neighbours, the midpoints to the next fp8 value and
their f32 neighbours: the RTNE ties), ±max and the overflow tie, ±inf, NaN, f32 denormals and
log-uniform random values. Upcasts fp8 -> f32 / f16 / bf16 and fp8 -> fp8 over all 256 bit
patterns. A conversion Triton refuses is recorded as `<key>_error` (its message).
The .npz is committed as tests/data/cuda/fp8_conversions.npz (tests/e2e/test_fp8.py); the
downcast kernel is msltrans/workloads/fp8_kernels.py's, which the test runs too
(`PYTHONPATH=.` from the repository root).
"""

from __future__ import annotations

import sys

import numpy as np
import torch
import triton
import triton.language as tl

from msltrans.workloads.fp8_kernels import fp8_downcast

DEV = "cuda"
FP8 = {"e4m3": (4, 3, tl.float8e4nv), "e5m2": (5, 2, tl.float8e5)}
SRC = {"float32": (torch.float32, tl.float32), "float16": (torch.float16, tl.float16),
       "bfloat16": (torch.bfloat16, tl.bfloat16)}


@triton.jit
def _up(x_ptr, out_ptr, n, SRC8: tl.constexpr, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(SRC8, bitcast=True)
    tl.store(out_ptr + offs, x.to(DST), mask=m)


def decode(bits: np.ndarray, ebits: int, mbits: int) -> np.ndarray:
    """OCP fp8 (e4m3fn: no inf, 0x7f/0xff NaN; e5m2: IEEE-like) to float64."""
    bits = bits.astype(np.int64)
    sign = np.where(bits >> 7, -1.0, 1.0)
    e = (bits >> mbits) & ((1 << ebits) - 1)
    m = bits & ((1 << mbits) - 1)
    bias = (1 << (ebits - 1)) - 1
    val = np.where(e == 0, m / 2**mbits * 2.0 ** (1 - bias),
                   (1 + m / 2**mbits) * 2.0 ** (e - bias))
    if ebits == 5:
        val = np.where(e == 31, np.where(m == 0, np.inf, np.nan), val)
    else:
        val = np.where((e == 15) & (m == 7), np.nan, val)
    return sign * val


def f32_values() -> np.ndarray:
    vals: list[np.ndarray] = []
    for ebits, mbits, _ in FP8.values():
        v = decode(np.arange(128), ebits, mbits)
        v = np.unique(v[np.isfinite(v)])
        mids = (v[:-1] + v[1:]) / 2
        top = v[-1] + (v[-1] - v[-2]) / 2  # the overflow tie
        pts = np.concatenate([v, mids, [top, top * 2, v[-1] * 4]]).astype(np.float32)
        vals += [pts, np.nextafter(pts, np.float32(np.inf)), np.nextafter(pts, np.float32(0))]
    rng = np.random.default_rng(8)
    rand = (2.0 ** rng.uniform(-30, 20, 4096)).astype(np.float32)
    special = np.array([np.inf, np.nan, 3.4e38, 1e30, 65504, 65520, 57344, 61440, 1e-45,
                        1e-40, 1.1754942e-38, 2.0**-20, 2.0**-17, 2.0**-18, 2.0**-10,
                        2.0**-9, 2.0**-7], np.float32)
    allv = np.concatenate(vals + [rand, special])
    allv = np.concatenate([allv, -allv])
    bits = np.unique(allv.view(np.uint32))
    return bits.view(np.float32)


def _launch(kernel, x: torch.Tensor, out: torch.Tensor, **kw) -> None:
    n = x.numel()
    kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256, **kw)
    torch.cuda.synchronize()


def main(path: str) -> None:
    rec: dict[str, np.ndarray] = {}
    xf = f32_values()
    rec["in_float32"] = xf
    rec["in_16bit"] = np.arange(65536, dtype=np.uint16)
    for src, (tdt, _) in SRC.items():
        if src == "float32":
            x = torch.from_numpy(xf).to(DEV)
        else:
            x = torch.from_numpy(rec["in_16bit"].view(np.int16)).to(DEV).view(tdt)
        for name, (_, _, f8) in FP8.items():
            for rnd in ("rtne", "rtz"):
                key = f"down_{src}_{name}_{rnd}"
                out = torch.empty(x.numel(), dtype=torch.uint8, device=DEV)
                try:
                    _launch(fp8_downcast, x, out, DST=f8, SRC=None, RTZ=rnd == "rtz")
                    rec[key] = out.cpu().numpy()
                except Exception as e:  # noqa: BLE001 - record what Triton refuses
                    rec[key + "_error"] = np.array(f"{type(e).__name__}: {e}"[:2000])
    bits8 = torch.arange(256, dtype=torch.int32).to(torch.uint8).to(DEV)
    dsts = {"float32": (torch.float32, tl.float32), "float16": (torch.float16, tl.float16),
            "bfloat16": (torch.bfloat16, tl.bfloat16), "e4m3": (torch.uint8, tl.float8e4nv),
            "e5m2": (torch.uint8, tl.float8e5)}
    for name, (_, _, f8) in FP8.items():
        for dst, (tdt, tldt) in dsts.items():
            if dst == name:
                continue
            key = f"up_{name}_{dst}"
            out = torch.empty(256, dtype=tdt, device=DEV)
            try:
                if tdt == torch.uint8:
                    _launch(_up, bits8, out.view(torch.float8_e4m3fn if dst == "e4m3"
                                                 else torch.float8_e5m2), SRC8=f8, DST=tldt)
                else:
                    _launch(_up, bits8, out, SRC8=f8, DST=tldt)
                o = out.cpu()
                rec[key] = (o.view(torch.int16).numpy() if tdt == torch.bfloat16 else
                            o.view(torch.int16).numpy() if tdt == torch.float16 else
                            o.view(torch.int32).numpy() if tdt == torch.float32 else o.numpy())
            except Exception as e:  # noqa: BLE001
                rec[key + "_error"] = np.array(f"{type(e).__name__}: {e}"[:2000])
    rec["meta_triton_version"] = np.array(triton.__version__)
    rec["meta_device"] = np.array(torch.cuda.get_device_name())
    np.savez_compressed(path, **rec)
    print(f"wrote {len(rec)} arrays to {path}:", sorted(rec))


if __name__ == "__main__":
    main(sys.argv[1])
