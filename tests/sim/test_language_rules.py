"""The simulator as Apple's gatekeeper for the language: what the real path (torch.mps.
compile_shader -> Metal) rejects, the simulator refuses with the rule's source, one negative
test per rule of msltrans.msl_subset.RULES (and its legal counterpart where there is one)."""

# ruff: noqa: E501 -- embedded MSL sources keep their own line structure

from __future__ import annotations

import numpy as np
import pytest

from msltrans import msl_subset
from msltrans.sim.compiler import ALIGNMENT_CHECK_ENV
from tests.support.shim import HEADER

KERNEL = "kernel void k(device float *o [[buffer(0)]], uint i [[thread_position_in_grid]])"


def _refused(sim, body: str, key: str = "", version: int = 320, name: str = "rules.metal") -> str:
    """The CompileError's text; rules the simulator checks itself cite their source."""
    with pytest.raises(sim.CompileError) as error:
        sim.compile_shader(HEADER + body, name, msl_version=version)
    message = str(error.value)
    if key in ("goto", "lambda", "bfloat_implicit", "recursion", "function_pointer"):
        assert f"[{_rule(key).source}]" in message
    return message


def _rule(key: str) -> msl_subset.Rule:
    return next(rule for rule in msl_subset.RULES if rule.key == key)


def test_every_rule_has_a_test_here():
    text = open(__file__, encoding="ascii").read()
    for rule in msl_subset.RULES:
        assert f'"{rule.key}"' in text, f"rule {rule.key} has no test in {__file__}"


def test_non_ascii_comment_is_refused_naming_line_and_character(sim):
    source = HEADER + "// erf rounds to \u00b11 in float\n" + KERNEL + " { o[i] = 1.0f; }\n"
    with pytest.raises(sim.CompileError) as error:
        sim.compile_shader(source, "ascii.metal")
    message = str(error.value)
    line = HEADER.count("\n") + 1
    assert message.startswith(f"non-ASCII character at ascii.metal:{line}:18: U+00B1 PLUS-MINUS SIGN")
    assert "0xC2 0xB1" in message and "NSASCIIStringEncoding" in message
    assert _rule("non_ascii").source in message


def test_non_ascii_in_an_included_header_is_not_refused(sim, tmp_path):
    """torch converts only the source string to ASCII; headers are read as files (torch's own
    c10/metal/special_math.h has a non-ASCII comment)."""
    (tmp_path / "helper.h").write_text("// caf\u00e9\ninline float twice(float x) { return 2 * x; }\n",
                                      encoding="utf-8")
    source = HEADER + '#include "helper.h"\n' + KERNEL + " { o[i] = twice(o[i]); }\n"
    lib = sim.compile_shader(source, "inc.metal", include_dirs=[str(tmp_path)])
    data = np.arange(4, dtype=np.float32)
    lib.k(data, threads=4, group_size=4)
    assert np.array_equal(data, 2 * np.arange(4, dtype=np.float32))


def test_goto_is_refused(sim):
    message = _refused(sim, KERNEL + " {\n if (i) goto done;\n o[i] = 1.0f;\n done: ;\n}\n", "goto")
    assert "a `goto` statement" in message and "1.5.4" in message
    assert f"rules.metal:{HEADER.count(chr(10)) + 2}:" in message


LAMBDA = KERNEL + " {\n  auto twice = [](float x) { return 2.0f * x; };\n  o[i] = twice(o[i]);\n}\n"


def test_lambda_is_refused_below_msl_3_2(sim):
    message = _refused(sim, LAMBDA, "lambda", version=310)
    assert "a lambda expression at MSL 3.1" in message and "1.5.4" in message


def test_lambda_compiles_and_runs_at_msl_3_2(sim):
    lib = sim.compile_shader(HEADER + LAMBDA, "lambda.metal", msl_version=320)
    data = np.arange(8, dtype=np.float32)
    lib.k(data, threads=8, group_size=8)
    assert np.array_equal(data, 2.0 * np.arange(8, dtype=np.float32))


def test_subscripts_and_attributes_are_not_lambdas(sim):
    body = (KERNEL + " {\n  float a[2] = {o[i], 1.0f};\n  uint idx[1] = {i};\n"
            "  o[idx[0]] = a[0] + a[ (i & 1) ];\n}\n")
    sim.compile_shader(HEADER + body, "subscripts.metal", msl_version=310)


BF16 = "kernel void k(device float *o [[buffer(0)]], device bfloat *b [[buffer(1)]], uint i [[thread_position_in_grid]])"


def test_implicit_float_to_bfloat_is_refused(sim):
    message = _refused(sim, BF16 + " {\n  float f = o[i];\n  b[i] = f * 2.0f;\n}\n", "bfloat_implicit")
    assert "an implicit conversion to bfloat" in message and "2.22" in message
    assert f"rules.metal:{HEADER.count(chr(10)) + 3}:" in message and "b[i] = f * 2.0f;" in message


def test_explicit_float_to_bfloat_conversions_compile_and_round_to_nearest_even(sim):
    body = (BF16 + " {\n  float f = o[i];\n  bfloat x = bfloat(f);\n  bfloat y = (bfloat)f;\n"
            "  bfloat z = static_cast<bfloat>(f);\n  b[i] = x == y && y == z ? x : bfloat(0.0f);\n}\n")
    lib = sim.compile_shader(HEADER + body, "bf16_ok.metal")
    values = np.array([1.0, 1.00390625, 1.01171875, -3.3, 65504.0, 1e-3, 0.0, -0.0], np.float32)
    out = np.zeros(values.size, np.uint16)
    lib.k(values.copy(), out, threads=values.size, group_size=values.size)
    # Reference: round to nearest even on the float's bits (no NaN among the inputs).
    bits = values.view(np.uint32).astype(np.uint64)
    expected = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    assert np.array_equal(out, expected)


def test_half_to_bfloat_is_rejected_by_clang(sim):
    message = _refused(sim, BF16 + " { half h = half(o[i]); bfloat x = h; b[i] = x; }")
    assert "bfloat" in message and "half" in message


def test_threadgroup_atomic_float_add_is_refused(sim):
    body = (KERNEL + " { threadgroup atomic_float a; atomic_store_explicit(&a, 0.0f, memory_order_relaxed);"
            " threadgroup_barrier(mem_flags::mem_threadgroup);"
            " atomic_fetch_add_explicit(&a, 1.0f, memory_order_relaxed); }")
    message = _refused(sim, body, "atomic_float_threadgroup")
    assert "threadgroup atomic_float" in message and "6.15.4.5" in message


def test_device_atomic_float_add_compiles_and_adds(sim):
    body = ("kernel void k(device atomic_float *a [[buffer(0)]], uint i [[thread_position_in_grid]])"
            " { atomic_fetch_add_explicit(a, 0.5f, memory_order_relaxed); }")
    lib = sim.compile_shader(HEADER + body, "atomic_float.metal")
    total = np.zeros(1, np.float32)
    lib.k(total, threads=64, group_size=32)
    assert total[0] == 32.0


@pytest.mark.parametrize("call, value_type", [
    ("simd_shuffle(v, ushort(l ^ 1u))", "long"),
    ("simd_shuffle_xor(v, ushort(1))", "ulong"),
    ("simd_broadcast(v, ushort(0))", "bool"),
])
def test_simd_permute_on_excluded_types_is_refused(sim, call, value_type):
    body = (f"kernel void k(device {value_type} *o [[buffer(0)]], uint i [[thread_position_in_grid]],"
            f" uint l [[thread_index_in_simdgroup]]) {{ {value_type} v = o[i]; o[i] = {call}; }}")
    message = _refused(sim, body, "simd_permute_type")
    assert "MSL 6.9.2 (Table 6.14) excludes bool, long, ulong" in message


def test_simd_permute_on_uint_halves_compiles_and_moves_values(sim):
    body = ("kernel void k(device ulong *o [[buffer(0)]], uint i [[thread_position_in_grid]],"
            " uint l [[thread_index_in_simdgroup]]) { uint2 w = as_type<uint2>(o[i]);"
            " w = uint2(simd_shuffle_xor(w.x, ushort(1)), simd_shuffle_xor(w.y, ushort(1)));"
            " o[i] = as_type<ulong>(w); }")
    lib = sim.compile_shader(HEADER + body, "shuffle64.metal")
    values = (np.arange(32, dtype=np.uint64) << np.uint64(33)) | np.arange(32, dtype=np.uint64)
    out = values.copy()
    lib.k(out, threads=32, group_size=32)
    assert np.array_equal(out, values[np.arange(32) ^ 1])


def test_recursion_is_refused(sim):
    body = ("int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }\n"
            "kernel void k(device int *o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = fact(o[i]); }\n")
    message = _refused(sim, body, "recursion")
    assert "a recursive call (`fact` -> `fact`)" in message and "maxCallStackDepth" in message


def test_mutual_recursion_is_refused(sim):
    body = ("int odd(int n);\nint even(int n) { return n == 0 ? 1 : odd(n - 1); }\n"
            "int odd(int n) { return n == 0 ? 0 : even(n - 1); }\n"
            "kernel void k(device int *o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = even(o[i]); }\n")
    assert "a recursive call" in _refused(sim, body, "recursion")


def test_function_pointer_is_refused(sim):
    body = ("int twice(int x) { return 2 * x; }\n"
            "kernel void k(device int *o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
            "  int (*f)(int) = twice;\n  o[i] = f(o[i]);\n}\n")
    message = _refused(sim, body, "function_pointer")
    assert "an indirect call (a function pointer) in `k`" in message and "5.1.4" in message
    assert f"rules.metal:{HEADER.count(chr(10)) + 4}:" in message


MISALIGNED = """kernel void k(device uint4 *o [[buffer(0)]], device ulong *in [[buffer(1)]],
              uint i [[thread_index_in_threadgroup]]) {
    threadgroup ulong x[8];
    x[i] = in[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    o[i] = ((threadgroup uint4 *)x)[i / 2u + OFFSET];
}
"""


@pytest.fixture
def alignment_check(monkeypatch):  # noqa: ANN001, ANN201
    monkeypatch.setenv(ALIGNMENT_CHECK_ENV, "1")


def test_threadgroup_vector_access_wider_than_the_declared_type_faults(sim, alignment_check):
    """`threadgroup ulong x[8]` is 8-byte aligned (MSL 2.5); read as uint4 it may be
    misaligned on the GPU, and the simulator places it so that it is."""
    lib = sim.compile_shader(HEADER + MISALIGNED.replace("OFFSET", "0u"), "misaligned.metal")
    with pytest.raises(sim.DeviceFailure) as error:
        lib.k(np.zeros(16, np.uint32), np.arange(8, dtype=np.uint64), threads=8, group_size=8)
    message = str(error.value)
    assert "misaligned threadgroup access: load of `uint4`" in message or \
        "misaligned threadgroup access: load of" in message
    assert f"misaligned.metal:{HEADER.count(chr(10)) + 6}:" in message
    assert "MSL 2.5" in message and _rule("threadgroup_alignment").source.startswith("MSL specification 2.5")


def test_threadgroup_vector_access_on_an_aligned_declaration_runs(sim, alignment_check):
    body = MISALIGNED.replace("threadgroup ulong x[8];", "alignas(16) threadgroup ulong x[8];").replace("OFFSET", "0u")
    lib = sim.compile_shader(HEADER + body, "aligned.metal")
    out = np.zeros(8 * 4, np.uint32)
    data = np.arange(8, dtype=np.uint64) * np.uint64(0x100000001)
    lib.k(out, data, threads=8, group_size=8)
    words = data.view(np.uint32)
    assert np.array_equal(out.reshape(8, 4), words.reshape(4, 4)[np.arange(8) // 2])
