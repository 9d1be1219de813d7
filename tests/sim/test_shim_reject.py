"""What Metal rejects must not compile under the shim either, with a readable message."""

# ruff: noqa: E501 -- embedded MSL sources keep their own line structure

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from shim_harness import CompileError, _real_compile_shader, clang_compile  # noqa: E402

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def _compile(source: str) -> None:
    """Compile through the real API when it exists (its CompileError carries clang's text)."""
    real = _real_compile_shader()
    if real is None:
        clang_compile(source, syntax_only=True)
        return
    import msltrans.sim as sim

    try:
        real(source)
    except sim.CompileError as e:
        raise CompileError(str(e)) from e


def _error(body: str) -> str:
    with pytest.raises(CompileError) as e:
        _compile(HEADER + body)
    return e.value.stderr


def test_double_is_rejected():
    msg = _error("kernel void k(device float* x [[buffer(0)]]) { double d = x[0]; x[0] = d * 2; }")
    assert "double" in msg and "requires cl_khr_fp64" in msg


def test_64bit_atomic_add_is_rejected():
    msg = _error(
        "kernel void k(device atomic_ulong* a [[buffer(0)]]) {"
        " atomic_fetch_add_explicit(a, 1ul, memory_order_relaxed); }"
    )
    assert "Metal has no 64-bit atomic add" in msg


def test_atomic_long_type_is_rejected():
    msg = _error(
        "kernel void k(device atomic<long>* a [[buffer(0)]]) { atomic_load_explicit(a, memory_order_relaxed); }"
    )
    assert "Metal atomics exist for int, uint, bool, float" in msg


def test_threadgroup_pointer_where_device_expected():
    msg = _error(
        "void f(device float* p) { p[0] = 1; }\n"
        "kernel void k(threadgroup float* t [[threadgroup(0)]]) { f(t); }"
    )
    assert "__local" in msg and "__global" in msg


def test_vector_constructor_size_mismatch():
    msg = _error("kernel void k(device float4* x [[buffer(0)]]) { x[0] = float4(x[0].xy, 1.0f); }")
    assert "do not add up" in msg


def test_as_type_size_mismatch():
    msg = _error(
        "kernel void k(device float* x [[buffer(0)]]) { x[0] = as_type<float>(half(1.0f)); }"
    )
    assert "same size" in msg


def test_ulong_min_max_accepted():
    _compile(
        HEADER + "kernel void k(device atomic_ulong* a [[buffer(0)]]) {"
        " atomic_fetch_max_explicit(a, 1ul, memory_order_relaxed); }"
    )
