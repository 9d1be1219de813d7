"""tl.device_print through the plugin (`kernel[grid](...)` on the simulator engine).

The expected text is computed here from the inputs and Triton's documented NVIDIA format:
`pid (x, y, z) idx (i, j)<prefix>(operand k) <value>`, index fields padded to
ceil(log10(dim)) digits, ints promoted like C varargs (`%i`/`%u`, sign- or zero-extended by
isSigned), floats as `%f` of the double, hex as `0x%0<bits/4>x` (floats: `%a`). Every thread
prints what it holds (a scalar once per thread); lines come sorted by pid, call, index.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.driver import driver

from msltrans._triton_compat import clear_device_caches
from msltrans.abi import debug_layout
from msltrans.errors import MetalNonRecoverableError
from msltrans.runtime import debug_buffer


@pytest.fixture(autouse=True)
def sim_driver():
    active = driver.active
    if type(active).__name__ != "MetalDriver" or active.engine_name != "sim":
        pytest.skip("needs the Metal driver on the simulator engine")
    return active


# ---- an independent model of C printf as Triton's NVIDIA lowering calls it ----------------

def c_int(value: int, bits: int, signed: bool) -> str:
    """%i / %u / %lli / %llu of the C-promoted value."""
    promoted = 64 if bits == 64 else 32
    v = value & ((1 << bits) - 1)
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return str(v) if signed else str(v % (1 << promoted))


def c_hex(value: int, bits: int, signed: bool) -> str:
    promoted = 64 if bits == 64 else 32
    v = value & ((1 << bits) - 1)
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return "0x" + format(v % (1 << promoted), f"0{bits // 4}x" if bits >= 4 else "x")


def c_float(v: float) -> str:
    if math.isnan(v):
        return "-nan" if math.copysign(1, v) < 0 else "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return "%f" % v  # noqa: UP031 - the C printf conversion being modelled


def width(dim: int) -> int:
    return math.ceil(math.log10(dim)) if dim > 1 else 0


def idx(*index_and_dims: tuple[int, int]) -> str:
    return ", ".join(f"{i:{width(d)}}" if width(d) else str(i) for i, d in index_and_dims)


def out_lines(capfd) -> list[str]:
    return [ln for ln in capfd.readouterr().out.splitlines() if ln]


# ---- kernels ------------------------------------------------------------------------------

@triton.jit
def print_kernel(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.device_print("x: ", x)


@triton.jit
def print_hex_kernel(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.device_print("x", x, hex=True)


@triton.jit
def print_unsigned_kernel(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.device_print("u", x.to(tl.uint32, bitcast=True), x.to(tl.uint8))


@triton.jit
def print_bool_kernel(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    print("b", x > 0)


@triton.jit
def print_scalar_kernel(X, n, f):
    x = tl.load(X)
    print("s", x, n, f)


@triton.jit
def print_2d_kernel(X, BM: tl.constexpr, BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    x = tl.load(X + offs)
    x = tl.where(x % 3 == 0, x, -1)  # a "mask" through tl.where
    tl.device_print("m", x)


@triton.jit
def print_pid_kernel(X, BLOCK: tl.constexpr):
    pid = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    x = tl.load(X + pid * BLOCK + tl.arange(0, BLOCK))
    tl.device_print("v", x)
    print("end")


@triton.jit
def print_loop_kernel(N: tl.constexpr):
    for i in range(N):
        print("i", i)


INT_CASES = [
    (np.int8, 8, True, [-128, -1, 0, 1, 127] + [5] * 27),
    (np.uint8, 8, False, [0, 1, 127, 128, 255] + [7] * 27),
    (np.int16, 16, True, [-32768, -1, 0, 1, 32767] + [9] * 27),
    (np.int32, 32, True, [-2**31, -1, 0, 1, 2**31 - 1] + [11] * 27),
    (np.uint32, 32, False, [0, 1, 2**31 - 1, 2**31, 2**32 - 1] + [13] * 27),
    (np.int64, 64, True, [-2**63, -2**31 - 1, -1, 0, 2**31, 2**32 + 5, 2**63 - 1] + [3] * 25),
]


@pytest.mark.parametrize("dtype, bits, signed, values", INT_CASES,
                         ids=[c[0].__name__ for c in INT_CASES])
@pytest.mark.parametrize("hexa", [False, True], ids=["dec", "hex"])
def test_integer_dtypes(capfd, dtype, bits, signed, values, hexa):
    x = np.array(values, dtype=dtype)
    kernel = print_hex_kernel if hexa else print_kernel
    kernel[(1,)](torch.from_numpy(x), BLOCK=32, num_warps=1)
    fmt = c_hex if hexa else c_int
    expected = [f"pid (0, 0, 0) idx ({idx((i, 32))}) x: {fmt(int(v), bits, signed)}"
                for i, v in enumerate(x.tolist())]
    assert out_lines(capfd) == expected


FLOAT_SPECIALS = [0.0, -0.0, 1.5, -2.25, 0.1, 1e-40, 65504.0, 1e30, float("inf"),
                  float("-inf"), float("nan"), -float("nan"), 3.0e-8, 123456.789, -7.0, 2.0**-14]


def _f32_values(dtype) -> np.ndarray:
    base = np.array(FLOAT_SPECIALS * 2, dtype=np.float32)
    if dtype == "bf16":
        return base
    with np.errstate(over="ignore"):
        return base.astype(dtype)  # 1e30 → inf in f16


@pytest.mark.parametrize("dtype", [np.float32, np.float16, "bf16"],
                         ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("hexa", [False, True], ids=["dec", "hex"])
def test_float_dtypes(capfd, dtype, hexa):
    base = _f32_values(dtype)
    if dtype == "bf16":
        t = torch.from_numpy(base).to(torch.bfloat16)
        exact = t.float().numpy().astype(np.float64)
    else:
        t = torch.from_numpy(base)
        exact = base.astype(np.float64)
    kernel = print_hex_kernel if hexa else print_kernel
    kernel[(1,)](t, BLOCK=32, num_warps=1)
    lines = out_lines(capfd)
    assert len(lines) == 32
    name = "x: "
    for i, (line, v) in enumerate(zip(lines, exact.tolist(), strict=True)):
        head = f"pid (0, 0, 0) idx ({idx((i, 32))}) {name}"
        assert line.startswith(head), line
        text = line[len(head):]
        if hexa:
            # %a: compare the value it spells (and the sign of NaN / zero)
            if math.isnan(v):
                assert text == ("-nan" if math.copysign(1, v) < 0 else "nan")
            else:
                got = float.fromhex(text)
                assert got == v and math.copysign(1, got) == math.copysign(1, v), (text, v)
                assert text.startswith("-0x" if math.copysign(1, v) < 0 else "0x") or \
                    text in ("inf", "-inf")
        else:
            assert text == c_float(v), (text, v)


def test_float_hex_spelling_is_glibc_a():
    # what C's printf("%a", (double)x) prints for the canonical values the upstream test uses
    cases = [(1.0, "0x1p+0"), (1.5, "0x1.8p+0"), (float(np.float32(0.1)), "0x1.99999ap-4"),
             (-1.5, "-0x1.8p+0"), (-0.0, "-0x0p+0"), (float("inf"), "inf"),
             (float("-inf"), "-inf"), (6.0, "0x1.8p+2"), (0.0, "0x0p+0"),
             (float("nan"), "nan"), (-float("nan"), "-nan")]
    for v, text in cases:
        assert debug_buffer.c_hex_float(v) == text


def test_unsigned_and_cast_operands(capfd):
    x = np.array([-1, 0, 1, 200, 255, 256, -2**31, 2**31 - 1] * 4, dtype=np.int32)
    print_unsigned_kernel[(1,)](torch.from_numpy(x), BLOCK=32, num_warps=1)
    expected = []
    for i, v in enumerate(x.tolist()):
        expected.append(f"pid (0, 0, 0) idx ({idx((i, 32))}) u: (operand 0) "
                        f"{c_int(v, 32, False)}")
    for i, v in enumerate(x.tolist()):
        expected.append(f"pid (0, 0, 0) idx ({idx((i, 32))}) u: (operand 1) "
                        f"{c_int(v, 8, False)}")
    assert out_lines(capfd) == expected


def test_bool_tensor(capfd):
    x = np.array([1, 0, -3, 5] * 8, dtype=np.int32)
    print_bool_kernel[(1,)](torch.from_numpy(x), BLOCK=32, num_warps=1)
    expected = [f"pid (0, 0, 0) idx ({idx((i, 32))}) b: {int(v > 0)}"
                for i, v in enumerate(x.tolist())]
    assert out_lines(capfd) == expected


def test_scalars_print_once_per_thread(capfd):
    x = np.array([-5], dtype=np.int64)
    print_scalar_kernel[(1,)](torch.from_numpy(x), 2**40 + 3, 0.5, num_warps=2)
    per_thread = [f"pid (0, 0, 0) idx () s: (operand 0) {-5}",
                  f"pid (0, 0, 0) idx () s: (operand 1) {2**40 + 3}",
                  f"pid (0, 0, 0) idx () s: (operand 2) {c_float(0.5)}"]
    lines = out_lines(capfd)
    # sorted by call, then operand: each operand's 64 thread copies in a row
    assert lines == [line for line in per_thread for _ in range(64)]


def test_2d_tensor_with_where_mask(capfd):
    bm, bn = 4, 16
    x = np.arange(bm * bn, dtype=np.int32) * 7 - 100
    print_2d_kernel[(1,)](torch.from_numpy(x), BM=bm, BN=bn, num_warps=2)
    expected = []
    for r in range(bm):
        for c in range(bn):
            v = int(x[r * bn + c])
            v = v if v % 3 == 0 else -1  # C remainder: sign of the dividend; 0 either way
            expected.append(f"pid (0, 0, 0) idx ({idx((r, bm), (c, bn))}) m: {v}")
    assert out_lines(capfd) == expected


def test_several_programs_sorted_by_pid(capfd):
    gx, gy, block = 3, 2, 32
    x = np.arange(gx * gy * block, dtype=np.int32) ** 2
    print_pid_kernel[(gx, gy)](torch.from_numpy(x), BLOCK=block, num_warps=1)
    expected = []
    for px in range(gx):
        for py in range(gy):
            base = (px * gy + py) * block
            expected += [f"pid ({px}, {py}, 0) idx ({idx((i, block))}) v: {x[base + i]}"
                         for i in range(block)]
            expected += [f"pid ({px}, {py}, 0) end"] * 32
    assert out_lines(capfd) == expected


def test_replicated_layout_prints_each_copy(capfd):
    # 8 elements over 32 threads: every element is held by 4 threads, and NVIDIA prints
    # all 4 copies; so do we
    x = np.arange(8, dtype=np.int32)
    print_kernel[(1,)](torch.from_numpy(x), BLOCK=8, num_warps=1)
    expected = [f"pid (0, 0, 0) idx ({i}) x: {i}" for i in range(8) for _ in range(4)]
    assert out_lines(capfd) == expected


def test_calls_in_a_loop_keep_their_order(capfd):
    print_loop_kernel[(1,)](N=3, num_warps=1)
    expected = [f"pid (0, 0, 0) idx () i: {i}" for i in range(3) for _ in range(32)]
    assert out_lines(capfd) == expected


def test_pointer_tensor(capfd):
    @triton.jit
    def kernel(X, BLOCK: tl.constexpr):
        tl.device_print("ptr ", X + tl.arange(0, BLOCK))

    x = torch.zeros(32, dtype=torch.int32)
    kernel[(1,)](x, BLOCK=32, num_warps=1)
    lines = out_lines(capfd)
    # %p of the device address: the simulator's (or the GPU's) address space, not the
    # host's; consecutive int32 elements are 4 bytes apart
    heads = [f"pid (0, 0, 0) idx ({idx((i, 32))}) ptr: 0x" for i in range(32)]
    assert [ln[:len(h)] for ln, h in zip(lines, heads, strict=True)] == heads
    addrs = [int(ln.rsplit(" ", 1)[1], 16) for ln in lines]
    assert addrs[0] != 0 and addrs == [addrs[0] + 4 * i for i in range(32)]


def test_overflow_is_reported(capfd, monkeypatch):
    # room for 10 records: 2 thread-reservations of 4 registers fit, the rest is counted
    room = 10
    monkeypatch.setenv(debug_buffer.BUFFER_ENV,
                       str((debug_layout.HEADER_WORDS + room * debug_layout.RECORD_WORDS) * 4))
    x = np.arange(128, dtype=np.int32)
    print_kernel[(1,)](torch.from_numpy(x), BLOCK=128, num_warps=1)
    captured = capfd.readouterr()
    lines = [ln for ln in captured.out.splitlines() if ln]
    assert len(lines) == 8  # two whole reservations of 4 elements
    assert "overflowed, 120 record(s) were lost" in captured.err
    assert debug_buffer.BUFFER_ENV in captured.err


def test_bad_buffer_size_is_refused(monkeypatch):
    monkeypatch.setenv(debug_buffer.BUFFER_ENV, "12")
    with pytest.raises(MetalNonRecoverableError, match="out of range"):
        debug_buffer.buffer_bytes()
    monkeypatch.setenv(debug_buffer.BUFFER_ENV, "lots")
    with pytest.raises(MetalNonRecoverableError, match="not an integer"):
        debug_buffer.buffer_bytes()


def test_fp8_print_is_refused():
    @triton.jit
    def kernel(X, BLOCK: tl.constexpr):
        x = tl.load(X + tl.arange(0, BLOCK))
        tl.device_print("x", x.to(tl.float8e5))

    with pytest.raises(MetalNonRecoverableError, match=r"tt.print.*float32"):
        kernel[(1,)](torch.zeros(32), BLOCK=32, num_warps=1)


def test_print_in_noinline_helper_is_refused():
    @triton.jit(noinline=True)
    def helper(v):
        print("v", v)

    @triton.jit
    def kernel(n):
        helper(n)

    with pytest.raises(MetalNonRecoverableError, match="noinline"):
        kernel[(1,)](3, num_warps=1)


def test_bits_model_matches_struct():
    # the reference's promotion agrees with C's through struct for a few values
    for v in (-1, -128, 127):
        assert c_int(v, 8, True) == str(struct.unpack("b", struct.pack("b", v))[0])
    assert c_hex(-1, 8, True) == "0xffffffff" and c_hex(5, 8, True) == "0x05"
    assert c_hex(1, 1, False) == "0x1"


def test_mps_engine_path_prints_the_same(capfd, monkeypatch):
    """The MPS engine's load + dispatch code, run here through the simulator (as
    tests/runtime/test_runtime_mps_via_sim.py does): the same hidden buffer, same text."""
    import msltrans.runtime.mps as mps
    import msltrans.sim
    from msltrans.backend.driver import MetalDriver
    from tests.support.plugin_fakes import install_engine

    monkeypatch.setattr(mps, "mps_available", lambda: True)
    monkeypatch.setattr(torch.mps, "compile_shader", msltrans.sim.compile_shader, raising=False)
    engine = mps.MpsEngine()
    engine.device_type = "cpu"  # the simulator behind it takes CPU tensors
    engine.core_count = lambda: 8  # torch has no MPS device to ask here
    engine.device_name = lambda: "Apple M1 (simulated)"
    loads = []
    real_load = engine.load
    engine.load = lambda source, name: loads.append(name) or real_load(source, name)

    metal = MetalDriver()
    install_engine(metal, engine)
    clear_device_caches()
    driver.set_active(metal)
    try:
        x = np.array([-7, 0, 2**31 - 1, 42] * 8, dtype=np.int32)
        print_hex_kernel[(2,)](torch.from_numpy(x), BLOCK=32, num_warps=1)
        assert loads  # compiled and loaded through the MPS engine
    finally:
        driver.reset_active()
        clear_device_caches()
    expected = [f"pid ({p}, 0, 0) idx ({idx((i, 32))}) x: {c_hex(int(v), 32, True)}"
                for p in range(2) for i, v in enumerate(x.tolist())]
    assert out_lines(capfd) == expected
