"""What Metal rejects must not compile under the shim either, with a readable message."""

# ruff: noqa: E501 -- embedded MSL sources keep their own line structure

import pytest

import msltrans.sim as sim
from msltrans import msl_version
from msltrans.errors import MetalNonRecoverableError
from tests.support.shim import HEADER


def _error(body: str) -> str:
    """The text of the CompileError the simulator raises (clang's diagnostics included)."""
    with pytest.raises(sim.CompileError) as e:
        sim.compile_shader(HEADER + body)
    return str(e.value)


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
    # MSL 6.15.4.6: void atomic_max/min_explicit on device atomic_ulong (MSL 2.4 and later).
    sim.compile_shader(
        HEADER + "kernel void k(device atomic_ulong* a [[buffer(0)]]) {"
        " atomic_max_explicit(a, 1ul, memory_order_relaxed);"
        " atomic_min_explicit(a, 1ul, memory_order_relaxed); }"
    )


@pytest.mark.parametrize(("body", "needle"), [
    # no fetch form: the 64-bit max/min return void
    ("ulong o = atomic_fetch_max_explicit(a, 1ul, memory_order_relaxed); a[1] = o;",
     "atomic_ulong has only the void atomic_max_explicit"),
    ("atomic_load_explicit(a, memory_order_relaxed);", "no 64-bit atomic load"),
    ("atomic_store_explicit(a, 1ul, memory_order_relaxed);", "no 64-bit atomic store"),
    ("atomic_exchange_explicit(a, 1ul, memory_order_relaxed);", "no 64-bit atomic exchange"),
])
def test_ulong_other_ops_rejected(body, needle):
    msg = _error("kernel void k(device atomic_ulong* a [[buffer(0)]]) { " + body + " }")
    assert needle in msg


def test_ulong_min_max_rejected_in_threadgroup_memory():
    msg = _error(
        "kernel void k(device uint* o [[buffer(0)]]) { threadgroup atomic_ulong t;"
        " atomic_max_explicit(&t, 1ul, memory_order_relaxed); }"
    )
    assert "atomic_max_explicit" in msg


def test_atomic_ulong_at_the_minimum_target():
    # atomic_ulong is MSL 2.4 (msl_version.FEATURES), older than any target msltrans supports:
    # the shim gates it on MSL_SIM_HAS_atomic_ulong, which every target has.
    assert msl_version.FEATURES["atomic_ulong"].version <= msl_version.MINIMUM
    sim.compile_shader(HEADER + "kernel void k(device atomic_ulong* a [[buffer(0)]]) {"
                       " atomic_max_explicit(a, 1ul, memory_order_relaxed); }", msl_version="3.1")
    with pytest.raises(MetalNonRecoverableError, match=r"needs MSL 2\.4 \(MSL §2\.6"):
        msl_version.require("atomic_ulong", 230, what="atomic_ulong")
