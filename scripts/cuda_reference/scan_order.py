"""Record Triton's CUDA backend's floating tt.scan results bit for bit (run on the lent H200):
    PYTHONPATH=. python scripts/cuda_reference/scan_order.py tests/data/cuda/scan_order.npz
For every case of msltrans/workloads/scan_order_kernels.py (shapes (8,32) … (1,1024) on both axes, a
1-D 4096 and a 3-D (4,16,32) on every axis, num_warps 4 and 16, bf16 / f16 / f32) it stores
the input bits, the ten scan outputs' bits (add, mul, `a*0.5+b`, a 2-tuple combine; forward
and reverse) and the TTGIR encoding of each tt.scan operand, so the replaying test
(tests/e2e/test_scan_cuda_order.py) can check that msltrans saw the same layout.
The 3-D case runs as a Gluon kernel with Triton 3.9's layout for it (K.LAYOUTS_3D: Triton 3.6
orders the load's dims differently); the same tt.scan, lowered by the same ScanOpToLLVM.
`up_*` replays upstream test_scan2d's bf16 cumsum/cumprod (its kernel, its RandomState(17)
input, f32 output). `probe_*` records Triton on a layout tl cannot produce (see _probe).
A case Triton fails to compile is stored as `<key>_error`.
"""

from __future__ import annotations

import multiprocessing as mp
import sys

import numpy as np
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from msltrans.workloads import scan_order_kernels as K


@gluon.jit
def scan_order_3d_gluon(x_ptr, m_ptr, out_ptr, D0: gl.constexpr, D1: gl.constexpr,
                        D2: gl.constexpr, AXIS: gl.constexpr, DT: gl.constexpr,
                        IT: gl.constexpr, L: gl.constexpr):
    """K.scan_order_3d with the blocked layout L given: the same ten scans (K._scans, a
    @triton.jit helper inlined into this Gluon kernel)."""
    a0 = gl.arange(0, D0, layout=gl.SliceLayout(1, gl.SliceLayout(2, L)))
    a1 = gl.arange(0, D1, layout=gl.SliceLayout(0, gl.SliceLayout(2, L)))
    a2 = gl.arange(0, D2, layout=gl.SliceLayout(0, gl.SliceLayout(1, L)))
    o0 = gl.expand_dims(gl.expand_dims(a0, 1), 2) * (D1 * D2)
    o1 = gl.expand_dims(gl.expand_dims(a1, 0), 2) * D2
    o2 = gl.expand_dims(gl.expand_dims(a2, 0), 1)
    o0, o1 = gl.broadcast(o0, o1)
    o01 = o0 + o1
    o01, o2 = gl.broadcast(o01, o2)
    offs = o01 + o2
    x = gl.load(x_ptr + offs).to(DT, bitcast=True)
    m = gl.load(m_ptr + offs).to(DT, bitcast=True)
    K._scans(x, m, out_ptr, offs, D0 * D1 * D2, AXIS, IT)


@gluon.jit
def probe_2d_gluon(x_ptr, out_ptr, D0: gl.constexpr, D1: gl.constexpr, L: gl.constexpr):
    o0 = gl.expand_dims(gl.arange(0, D0, layout=gl.SliceLayout(1, L)), 1) * D1
    o1 = gl.expand_dims(gl.arange(0, D1, layout=gl.SliceLayout(0, L)), 0)
    o0, o1 = gl.broadcast(o0, o1)
    offs = o0 + o1
    x = gl.load(x_ptr + offs)
    gl.store(out_ptr + offs, gl.associative_scan(x, 0, K._add))
    gl.store(out_ptr + D0 * D1 + offs, gl.associative_scan(x, 0, K._add, reverse=True))


def _one(case: tuple) -> tuple[str, dict]:
    import torch

    shape, axis, nw, dtype = case
    key = K.case_key(shape, axis, nw, dtype)
    x, m = K.inputs(shape, axis, dtype)
    out = np.zeros((K.N_OUT, x.size), x.dtype)
    try:
        tx, tm = torch.from_numpy(x).cuda(), torch.from_numpy(m).cuda()
        tout = torch.from_numpy(out).cuda()
        cx = K.constexprs(shape, axis, dtype)
        k = None
        extra = {}
        if len(shape) == 3:  # Triton 3.9's layout, given explicitly (K.LAYOUTS_3D)
            spt, tpw, wpc, order = K.layout_3d(nw, dtype)
            try:
                k = scan_order_3d_gluon[(1,)](tx, tm, tout, num_warps=nw,
                                              L=gl.BlockedLayout(spt, tpw, wpc, order), **cx)
            except Exception as e:  # noqa: BLE001 - fall back to the tl kernel, noted
                extra["gluon_error"] = np.array(f"{type(e).__name__}: {e}"[:2000])
        if k is None:
            k = K.KERNELS[len(shape)][(1,)](tx, tm, tout, num_warps=nw, **cx)
        torch.cuda.synchronize()
        layouts = K.scan_layouts(k.asm["ttgir"])
        return key, {"x": x, "m": m, "out": tout.cpu().numpy(),
                     "layouts": np.array(layouts), **extra}
    except Exception as e:  # noqa: BLE001 - recorded, not hidden
        return key, {"error": np.array(f"{type(e).__name__}: {e}"[:2000])}


def _upstream(case: tuple) -> tuple[str, dict]:
    import torch

    shape, axis, rev, nw, prod = case
    key = K.upstream_key(*case)
    x = torch.from_numpy(K.upstream_input(shape)).cuda().view(torch.bfloat16)
    z = torch.zeros(shape, dtype=torch.float32, device="cuda")
    try:
        k = K.upstream_scan2d[(1,)](x, x, z, BLOCK_M=shape[0], BLOCK_N=shape[1], AXIS=axis,
                                    REV=rev, PROD=prod, num_warps=nw)
        torch.cuda.synchronize()
        return key, {"out": z.cpu().numpy(), "layouts": np.array(K.scan_layouts(k.asm["ttgir"]))}
    except Exception as e:  # noqa: BLE001
        return key, {"error": np.array(f"{type(e).__name__}: {e}"[:2000])}


def _probe() -> dict:
    """Triton's own result on a layout whose axis is registers only, split by another dim's
    registers (contiguity 2, one register repeat): recorded to document Triton, not replayed."""
    import torch

    x = (np.arange(4 * 512, dtype=np.float32) % 7 - 3).reshape(4, 512)
    tx = torch.from_numpy(x).cuda()
    tout = torch.zeros((2, 4, 512), dtype=torch.float32, device="cuda")
    try:
        k = probe_2d_gluon[(1,)](tx, tout, D0=4, D1=512, num_warps=4,
                                 L=gl.BlockedLayout([2, 2], [1, 32], [1, 4], [1, 0]))
        torch.cuda.synchronize()
        return {"probe_x": x, "probe_out": tout.cpu().numpy(),
                "probe_layouts": np.array(K.scan_layouts(k.asm["ttgir"]))}
    except Exception as e:  # noqa: BLE001
        return {"probe_error": np.array(f"{type(e).__name__}: {e}"[:2000])}


def main(path: str) -> None:
    import triton

    cases = K.cases()
    with mp.get_context("spawn").Pool(12) as pool:
        results = pool.map(_one, cases)
    data: dict[str, np.ndarray] = {"triton_version": np.array(triton.__version__)}
    with mp.get_context("spawn").Pool(12) as pool:
        data.update(pool.apply(_probe))
        for key, fields in pool.map(_upstream, K.upstream_cases()):
            data.update({f"{key}_{name}": value for name, value in fields.items()})
    for (shape, axis, _, dtype), (key, fields) in zip(cases, results, strict=True):
        for name, value in fields.items():
            if name in ("x", "m"):  # the same inputs for every num_warps
                data[f"{K.input_key(shape, axis, dtype)}_{name}"] = value
            else:
                data[f"{key}_{name}"] = value
    np.savez_compressed(path, **data)
    errors = [k for k in data if "error" in k]
    print(f"{len(results)} cases, {len(errors)} errors {errors[:5]}; triton "
          f"{triton.__version__} -> {path}")


if __name__ == "__main__":
    main(sys.argv[1])
