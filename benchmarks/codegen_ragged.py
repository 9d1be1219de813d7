"""Table 3 of codegen_stats.py: the vector share of ragged kernels, at run time.

Each row compiles a kernel as a launch with its values would (Triton's specialisation, then
the launcher's alignment variant: benchmarks/proxy/specialise.py) and runs it on the
simulator with the profiler on (msltrans.sim.profiling), which counts every global load and
store by access width. Columns:

  variant    the divisibilities the alignment variant states ("-": the first compile runs)
  static     vec% of table 1: elements in vector accesses, as emitted
  ld16%      share of the load bytes the run moved in 16-byte accesses; every access moves
             only in-bounds bytes (masked-off elements are not read), so this is the share
             of the in-bounds load bytes
  st16%      the same for stores
  ld bytes   load bytes the run moved (rows as stated; the shares do not depend on them)

    python -m benchmarks.codegen_stats --ragged-only
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.proxy import kernels as K
from benchmarks.proxy.specialise import Arg, compile_launch
from msltrans.lower import MslProgram

P32, P16 = Arg("*fp32"), Arg("*fp16")
ROWS = 4096


def _i(v: int) -> Arg:
    return Arg("i32", v)


Case = tuple[Any, dict[str, Arg], dict[str, Any], int, Callable[[int], tuple[tuple, tuple]]]


def _softmax(stride: int, cols: int) -> Case:
    args = dict(out_ptr=P32, in_ptr=P32, in_stride=_i(stride), out_stride=_i(stride),
                n_rows=_i(ROWS), n_cols=_i(cols))

    def data(rows: int) -> tuple[tuple, tuple]:
        x = np.random.default_rng(0).standard_normal((rows, stride)).astype(np.float32)
        return (256,), (np.zeros_like(x), x, stride, stride, rows, cols)
    return K.row_softmax_kernel, args, dict(BLOCK=1024, STAGES=None), 8, data


def _layer_norm(dtype: np.dtype, cols: int) -> Case:
    p = P16 if dtype == np.float16 else P32
    args = dict(x_ptr=p, y_ptr=p, w_ptr=p, b_ptr=p, mean_ptr=P32, rstd_ptr=P32,
                row_stride=_i(cols), N=_i(cols), eps=Arg("fp32", 1e-5))

    def data(rows: int) -> tuple[tuple, tuple]:
        rng = np.random.default_rng(1)
        x = rng.standard_normal((rows, cols)).astype(dtype)
        w, b = (rng.standard_normal(cols).astype(dtype) for _ in range(2))
        stats = np.zeros(rows, np.float32)
        return (rows,), (x, np.zeros_like(x), w, b, stats, stats.copy(), cols, cols, 1e-5)
    # tutorial 05's choice for 4000 columns: BLOCK = next power of two, 8 warps
    return K.layer_norm_fwd_rows, args, dict(BLOCK=4096), 8, data


RAGGED: list[tuple[str, Case]] = [
    ("softmax fp32 4096x1000 stride 1024", _softmax(1024, 1000)),
    ("softmax fp32 4096x1000 stride 1000", _softmax(1000, 1000)),
    ("softmax fp32 4096x1001 stride 1008", _softmax(1008, 1001)),
    ("layer norm fp16 4096x4000", _layer_norm(np.float16, 4000)),
    ("layer norm fp32 4096x4000", _layer_norm(np.float32, 4000)),
]


def _static_vec(program: MslProgram) -> int:
    from benchmarks.codegen_workloads import _MEM_RE

    total = vec = 0
    for m in _MEM_RE.finditer(program.source):
        total += int(m.group(2))
        vec += int(m.group(2)) if int(m.group(3)) > 1 else 0
    return round(100 * vec / total) if total else 100


def measure(case: Case, rows: int = ROWS) -> dict[str, Any]:
    from msltrans.sim.profile_records import DEVICE_LOAD, DEVICE_STORE
    from msltrans.sim.profiling import profile
    from msltrans.toolchain import run_on_simulator

    fn, args, constexprs, warps, data = case
    program, variant = compile_launch(fn, args, constexprs, warps)
    grid, values = data(rows)
    with profile() as prof:
        run_on_simulator(program, grid, values)
    moved = {DEVICE_LOAD: [0, 0], DEVICE_STORE: [0, 0]}
    for launch in prof.launches:
        for site in launch.sites:
            if site.kind in moved:
                moved[site.kind][0] += site.bytes
                moved[site.kind][1] += site.bytes if site.width == 16 else 0
    ld, st = moved[DEVICE_LOAD], moved[DEVICE_STORE]
    return {"variant": ",".join(f"{k}%{v}" for k, v in variant.items()) or "-",
            "static": _static_vec(program),
            "ld16%": round(100 * ld[1] / ld[0], 1) if ld[0] else 100.0,
            "st16%": round(100 * st[1] / st[0], 1) if st[0] else 100.0,
            "ld bytes": ld[0]}


def rows_table(rows: int = ROWS) -> list[dict[str, Any]]:
    return [{"kernel": name, **measure(case, rows)} for name, case in RAGGED]
