"""THE test helper: compile an unmodified @triton.jit kernel through msltrans and run it.

`to_ttgir` + `lower_module`, then dispatch through the CPU simulator exactly as the
contract says: grid (gx, gy, gz) → threads = (gx*T, gy, gz), group_size = (T, 1, 1).
Until the Triton plugin's `kernel[grid](...)` path exists, every e2e test goes through here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from msltrans.ir import read_module, read_ttgir_file
from msltrans.lower import MslProgram, lower_module
from msltrans.toolchain import run_on_simulator, to_ttgir

_NP_TO_TRITON = {
    np.dtype(np.float32): "*fp32", np.dtype(np.float16): "*fp16", np.dtype(np.int32): "*i32",
    np.dtype(np.int64): "*i64", np.dtype(np.int16): "*i16", np.dtype(np.int8): "*i8",
    np.dtype(np.uint8): "*u8", np.dtype(np.uint32): "*u32", np.dtype(np.bool_): "*i1",
    np.dtype(np.uint16): "*u16", np.dtype(np.uint64): "*u64",
}
SIM_INCLUDE = Path(__file__).resolve().parents[2] / "msltrans" / "sim" / "include"


def signature_of(fn: Any, args: tuple, constexprs: dict) -> dict[str, str]:
    names = [n for n in fn.arg_names if n not in constexprs]
    sig = {}
    for name, a in zip(names, args, strict=True):
        if isinstance(a, np.ndarray):
            sig[name] = _NP_TO_TRITON[a.dtype]
        elif isinstance(a, bool):
            sig[name] = "i1"
        elif isinstance(a, int):
            sig[name] = "i32" if -(2**31) <= a < 2**31 else "i64"
        elif isinstance(a, float):
            sig[name] = "fp32"
        else:
            raise TypeError(f"argument {name}: {type(a)}")
    return sig


def divisible_by_16(fn: Any, args: tuple, constexprs: dict) -> tuple[str, ...]:
    """The arguments Triton's launcher would specialise as multiples of 16: arrays whose
    address is, and integers that are (as `tt.divisibility = 16`)."""
    names = [n for n in fn.arg_names if n not in constexprs]
    out = []
    for name, a in zip(names, args, strict=True):
        if isinstance(a, np.ndarray) and a.ctypes.data % 16 == 0:
            out.append(name)
        elif isinstance(a, int) and not isinstance(a, bool) and a % 16 == 0:
            out.append(name)
    return tuple(out)


def compile_kernel(fn: Any, args: tuple, num_warps: int = 4, **constexprs: Any) -> MslProgram:
    sig = signature_of(fn, args, constexprs)
    div = divisible_by_16(fn, args, constexprs)
    return lower_module(read_module(to_ttgir(fn, sig, constexprs, num_warps,
                                             divisible_by_16=div)))


def compile_ttgir(path: str | Path) -> MslProgram:
    return lower_module(read_ttgir_file(path))


_CHECKED: set[str] = set()


def check_msl_compiles(source: str) -> None:
    """Syntax- and type-check MSL with clang against the simulator's metal_stdlib shim
    (once per distinct source in a process)."""
    if source in _CHECKED:
        return
    _check_msl_compiles(source)
    _CHECKED.add(source)


def _check_msl_compiles(source: str) -> None:
    clang = shutil.which("clang-19") or shutil.which("clang")
    if clang is None:
        return
    # The simulator rewrites function-scope `threadgroup` arrays into runtime storage; plain
    # OpenCL C++ only allows them in kernels, so the syntax check sees a pointer instead.
    checked = re.sub(r"threadgroup (\w+) (\w+)\[(\d+)\];",
                     r"threadgroup \1* \2 = (threadgroup \1*)0;", source)
    with tempfile.NamedTemporaryFile("w", suffix=".metal", delete=False) as f:
        f.write(checked)
    from msltrans import msl_version
    from msltrans.sim.compiler import language_flags

    cmd = [clang, *language_flags(msl_version.target()), "-I", str(SIM_INCLUDE),
           "-fsyntax-only", f.name]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[:4000] + "\n--- MSL ---\n" + source


def sim_or_skip() -> Any:
    import msltrans.sim as sim

    return sim


def dispatch(program: MslProgram, grid: tuple[int, ...], args: tuple) -> None:
    """Run on the simulator per the dispatch contract; arrays are updated in place. (No
    separate syntax check first: the simulator's build compiles the same text with the same
    language flags and shim, and refuses more.)"""
    run_on_simulator(program, grid, args)


def run_kernel(fn: Any, grid: tuple[int, ...], *args: Any, num_warps: int = 4,
               **constexprs: Any) -> MslProgram:
    """`fn[grid](*args, **constexprs)` through msltrans + the simulator."""
    program = compile_kernel(fn, args, num_warps, **constexprs)
    dispatch(program, grid, args)
    return program
