"""Cross-vendor: msltrans's floating tt.scan gives the bits Triton's CUDA backend gave.

tests/data/cuda/scan_order.npz comes from scripts/cuda_reference/scan_order.py (Triton 3.6 on
the lent H200): bf16 / f16 / f32 add, mul, `a*0.5 + b` (not associative) and a 2-tuple
combine, forward and reverse, over 18 (shape, axis) pairs × num_warps 4/16 — layouts with
several elements per thread, lanes and warps on and off the axis, register repeats, broadcast
warps. Every case must match bit for bit; a case whose TTGIR scan layout differs from the one
CUDA recorded is skipped (a handful at most, asserted). The default run replays one dtype per
(shape, axis, num_warps), rotating; `-m slow` replays all 108.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from msltrans.ir import read_module
from msltrans.lower import lower_module
from msltrans.toolchain import to_ttgir
from msltrans.workloads import scan_order_kernels as K
from tests.support.run_kernel import dispatch, signature_of

NPZ = Path(__file__).resolve().parents[1] / "data" / "cuda" / "scan_order.npz"
NAMES = ("add", "add rev", "mul", "mul rev", "half", "half rev", "pair.a", "pair.b",
         "pair.a rev", "pair.b rev")
pytestmark = pytest.mark.skipif(not NPZ.exists(), reason="no tests/data/cuda/scan_order.npz "
                                "(run scripts/cuda_reference/scan_order.py on an NVIDIA GPU)")


def _params() -> list:
    out = []
    dts = list(K.DTYPES)
    for i, (shape, axis, nw, dt) in enumerate(K.cases()):
        default = dt == dts[(i // len(dts)) % len(dts)]
        marks = () if default else (pytest.mark.slow,)
        out.append(pytest.param(shape, axis, nw, dt, marks=marks,
                                id=K.case_key(shape, axis, nw, dt)))
    return out


def _replay(shape: tuple[int, ...], axis: int, nw: int, dtype: str) -> str | None:
    """Run one case; None when it matched, the layout pair when the layouts differ."""
    key = K.case_key(shape, axis, nw, dtype)
    if not _has(f"{key}_out"):
        pytest.skip(f"{key} not recorded in {NPZ.name}")
    with np.load(NPZ) as data:
        x = data[f"{K.input_key(shape, axis, dtype)}_x"]
        m = data[f"{K.input_key(shape, axis, dtype)}_m"]
        want = data[f"{key}_out"]
        cuda_layouts = [str(s) for s in data[f"{key}_layouts"]]
    fn, cx = K.KERNELS[len(shape)], K.constexprs(shape, axis, dtype)
    out = np.zeros((K.N_OUT, x.size), x.dtype)
    # The CUDA JIT specialised the (16-byte aligned) pointers as divisible by 16; so does
    # msltrans's launch path, and the load layouts (vector width) depend on it.
    mod = to_ttgir(fn, signature_of(fn, (x, m, out), cx), cx, nw,
                   divisible_by_16=("x_ptr", "m_ptr", "out_ptr"))
    ours = K.scan_layouts(str(mod))
    if ours != cuda_layouts:
        return f"{key}: ours {sorted(set(ours))} vs CUDA {sorted(set(cuda_layouts))}"
    dispatch(lower_module(read_module(mod)), (1,), (x, m, out))
    for row, name in enumerate(NAMES):
        got, ref = out[row], want[row]
        bad = np.flatnonzero(got != ref)
        if bad.size:
            i = int(bad[0])
            pytest.fail(f"{key} {name}: {bad.size}/{got.size} elements differ; first at "
                        f"{np.unravel_index(i, shape)}: ours {K.decode(got[i:i + 1], dtype)[0]!r}"
                        f" vs CUDA {K.decode(ref[i:i + 1], dtype)[0]!r}")
    return None


SKIPPED: list[str] = []


@pytest.mark.parametrize(("shape", "axis", "num_warps", "dtype"), _params())
def test_scan_bits_match_cuda(shape: tuple[int, ...], axis: int, num_warps: int,
                              dtype: str) -> None:
    differs = _replay(shape, axis, num_warps, dtype)
    if differs:
        SKIPPED.append(differs)
        assert len(SKIPPED) <= 4, "too many layout differences:\n" + "\n".join(SKIPPED)
        pytest.skip(f"layout differs from CUDA's: {differs}")


def test_reference_is_a_scan() -> None:
    """The recorded CUDA add scans are cumulative sums (a sanity check on the file)."""
    with np.load(NPZ) as data:
        assert str(data["triton_version"]).startswith("3.")
        for shape, axis, nw, dtype in K.cases():
            x = K.decode(data[f"{K.input_key(shape, axis, dtype)}_x"], dtype).reshape(shape)
            got = K.decode(data[f"{K.case_key(shape, axis, nw, dtype)}_out"][0], dtype)
            scale = np.cumsum(np.abs(x), axis=axis)
            err = np.abs(got.reshape(shape) - np.cumsum(x, axis=axis))
            assert np.all(err <= 0.02 * scale + 1e-6), (shape, axis, nw, dtype)


def _upstream_params() -> list:
    out = []
    for i, case in enumerate(K.upstream_cases()):
        marks = () if i % 4 == 0 else (pytest.mark.slow,)
        out.append(pytest.param(*case, marks=marks, id=K.upstream_key(*case)))
    return out


def _has(key: str) -> bool:
    with np.load(NPZ) as data:
        return key in data.files


@pytest.mark.parametrize(("shape", "axis", "rev", "num_warps", "prod"), _upstream_params())
def test_upstream_scan2d_bf16_matches_cuda(shape: tuple[int, int], axis: int, rev: bool,
                                           num_warps: int, prod: bool) -> None:
    """Upstream test_scan2d's own bf16 cumsum/cumprod kernel and input: CUDA's f32 output."""
    key = K.upstream_key(shape, axis, rev, num_warps, prod)
    if not _has(f"{key}_out"):
        pytest.skip(f"{key} not recorded in {NPZ.name}")
    with np.load(NPZ) as data:
        want = data[f"{key}_out"]
        cuda_layouts = [str(s) for s in data[f"{key}_layouts"]]
    x = K.upstream_input(shape)
    z = np.zeros(shape, np.float32)
    cx = {"BLOCK_M": shape[0], "BLOCK_N": shape[1], "AXIS": axis, "REV": rev, "PROD": prod}
    mod = to_ttgir(K.upstream_scan2d, {"X": "*bf16", "Y": "*bf16", "Z": "*fp32"}, cx,
                   num_warps, divisible_by_16=("X", "Y", "Z"))
    ours = K.scan_layouts(str(mod))
    if ours != cuda_layouts:
        SKIPPED.append(f"{key}: ours {ours} vs CUDA {cuda_layouts}")
        assert len(SKIPPED) <= 4, "too many layout differences:\n" + "\n".join(SKIPPED)
        pytest.skip(f"layout differs from CUDA's: {SKIPPED[-1]}")
    dispatch(lower_module(read_module(mod)), (1,), (x, x, z))
    bad = np.flatnonzero(z.view(np.uint32) != want.view(np.uint32))
    assert bad.size == 0, (f"{key}: {bad.size}/{z.size} differ; first at "
                           f"{np.unravel_index(int(bad[0]), shape)}: ours "
                           f"{z.flat[bad[0]]!r} vs CUDA {want.flat[bad[0]]!r}")
