"""Differential-test plumbing: compile an unmodified @triton.jit kernel with an explicit
Triton signature (unsigned and bf16 pointers included, which run_kernel's numpy mapping
cannot express), run it on the simulator, and compare results bit for bit.

bf16 data travels as its raw 16-bit patterns in uint16 arrays.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from msltrans.ir import read_module
from msltrans.lower import MslProgram, lower_module
from msltrans.toolchain import to_ttgir
from tests.support.run_kernel import dispatch

TRITON_PTR = {
    "int8": "*i8", "int16": "*i16", "int32": "*i32", "int64": "*i64", "uint8": "*u8",
    "uint16": "*u16", "uint32": "*u32", "uint64": "*u64", "float16": "*fp16",
    "bfloat16": "*bf16", "float32": "*fp32",
}
STORAGE = {"bfloat16": np.uint16}  # numpy dtype that carries a Triton dtype's bits
CUDA_DATA = Path(__file__).resolve().parents[1] / "data" / "cuda"


def cuda_reference(name: str) -> Any:
    """tests/data/cuda/<name>.npz: what scripts/cuda_reference/<name>.py recorded on NVIDIA."""
    return np.load(CUDA_DATA / f"{name}.npz")


def np_dtype(dtype: str) -> np.dtype:
    return np.dtype(STORAGE.get(dtype, dtype))


def compile_typed(fn: Any, signature: dict[str, str], constexprs: dict[str, Any],
                  num_warps: int = 4, enable_fp_fusion: bool = True) -> MslProgram:
    module = read_module(to_ttgir(fn, signature, constexprs, num_warps))
    return lower_module(module, enable_fp_fusion=enable_fp_fusion)


def launch(program: MslProgram, grid: tuple[int, ...], *args: Any) -> None:
    dispatch(program, grid, args)


def bf16_from_f32(x: np.ndarray) -> np.ndarray:
    """Round float32 to bf16 bits (nearest even), NaN kept NaN."""
    import torch

    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(torch.bfloat16)
    return t.view(torch.int16).numpy().view(np.uint16)


def f32_from_bf16(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_round_to_odd(x64: np.ndarray) -> np.ndarray:
    """float64 → float32 rounding to odd (so the later f32 → bf16 rounding is correct)."""
    f = x64.astype(np.float32)
    inexact = (f.astype(np.float64) != x64) & np.isfinite(x64)
    even = (f.view(np.uint32) & 1) == 0
    toward = np.where(x64 > f, np.float32(np.inf), np.float32(-np.inf))
    return np.where(inexact & even, np.nextafter(f, toward), f)


def as_float(x: np.ndarray, dtype: str) -> np.ndarray:
    """The values of a float array (bf16 bits decoded) as float64."""
    if dtype == "bfloat16":
        return f32_from_bf16(x).astype(np.float64)
    return x.astype(np.float64)


def ulp_error(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in float32 ulps of the (float64) reference."""
    return np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref.astype(np.float32)))


def assert_same_bits(got: np.ndarray, want: np.ndarray, dtype: str, what: str = "") -> None:
    """Bit-exact equality; for floats NaN matches any NaN (payloads are not compared)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if dtype in ("float16", "float32", "bfloat16"):
        g, w = as_float(got, dtype), as_float(want, dtype)
        nan_g, nan_w = np.isnan(g), np.isnan(w)
        bits_g = got.view(f"uint{got.itemsize * 8}")
        bits_w = want.astype(got.dtype).view(f"uint{got.itemsize * 8}")
        bad = (nan_g != nan_w) | (~nan_g & ~nan_w & (bits_g != bits_w))
    else:
        bad = got != want
    if bad.any():
        idx = np.flatnonzero(bad)[:10]
        raise AssertionError(f"{what}: {bad.sum()} of {bad.size} differ; first at {idx.tolist()}"
                             f": got {got.ravel()[idx].tolist()} want {want.ravel()[idx].tolist()}")


_APPLE_NAN = {np.dtype(np.float32): np.uint32(0x7FC00000), np.dtype(np.float16): np.uint16(0x7E00)}


def apple_nan(x: np.ndarray) -> np.ndarray:
    """`x` with every NaN made Apple's canonical one (positive quiet, payload 0): what float
    arithmetic gives on Apple GPUs and the simulator (msltrans/sim/nan_canon.py), where
    numpy on x86 gives 0xFFC00000 for 0/0 and passes NaN operands through."""
    x = np.array(x)
    bits = x.view(f"uint{x.itemsize * 8}")
    bits[np.isnan(x)] = _APPLE_NAN[x.dtype]
    return x
