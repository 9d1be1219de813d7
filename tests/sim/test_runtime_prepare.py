"""Source preparation: threadgroup declarations, kernel discovery, compiler discovery."""

from __future__ import annotations

import numpy as np
import pytest

TG_FORMS = """
#include <metal_stdlib>
using namespace metal;
#define N 8
template <typename T>
kernel void shuffle_back(device T* x [[buffer(0)]], uint lid [[thread_position_in_threadgroup]]) {
    threadgroup T first[N], second[N];
    threadgroup uint counter;
    if (lid == 0) counter = 0;
    first[lid] = x[lid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    second[lid] = first[N - 1 - lid] + T(1);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid == 0) counter = 7;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    x[lid] = second[lid] + T(counter);
}
template [[host_name("shuffle_back_f")]] [[kernel]]
void shuffle_back<float>(device float*, uint);
template [[host_name("shuffle_back_i")]] [[kernel]]
void shuffle_back<int>(device int*, uint);
"""


def test_threadgroup_declaration_forms_per_instantiation(sim):
    lib = sim.compile_shader(TG_FORMS)
    for name, dtype in (("shuffle_back_f", np.float32), ("shuffle_back_i", np.int32)):
        x = np.arange(8, dtype=dtype)
        getattr(lib, name)(x, threads=8, group_size=8)
        np.testing.assert_array_equal(x, np.arange(8)[::-1] + 8)
        # two arrays of 8 elements and a scalar, each rounded to 16 bytes
        expected = 2 * ((8 * x.itemsize + 15) // 16 * 16) + 16
        assert getattr(lib, name).static_thread_group_memory_length == expected


def test_mark_source_keeps_columns_and_skips_comments_and_strings():
    from msltrans.sim.prepare import KERNEL_MARK, mark_source

    source = 'kernel void f() {} // kernel in a comment\nconstant char* s = "kernel";\n'
    marked = mark_source(source)
    first, second = marked.split("\n")[:2]
    assert first.startswith(KERNEL_MARK + " void f()") and first.endswith("// kernel in a comment")
    assert second == 'constant char* s = "kernel";'
    assert len(KERNEL_MARK) == len("kernel")


def test_parameters_without_index_take_the_next_free_one():
    from msltrans.sim.signatures import parse_params

    params = parse_params("device float* a, constant uint& n [[buffer(0)]], device int* b, "
                          "uint i [[thread_position_in_grid]]", "k")
    assert [(p.name, p.kind, p.index) for p in params] == [
        ("a", "buffer", 1), ("n", "buffer", 0), ("b", "buffer", 2), ("i", "builtin", -1)]


def test_bad_compiler_override_is_explained(monkeypatch):
    from msltrans.sim import compiler

    compiler._find.cache_clear()
    monkeypatch.setenv("MSLTRANS_CLANG", "/nonexistent/clang")
    try:
        with pytest.raises(compiler.CompilerNotFoundError, match="MSLTRANS_CLANG"):
            compiler.find_compiler()
    finally:
        compiler._find.cache_clear()


def test_kernels_named_like_the_entry_parameters(sim):
    # The generated entry's own parameters must not shadow a kernel called b, t or tg.
    lib = sim.compile_shader("""
#include <metal_stdlib>
using namespace metal;
kernel void b(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] += 1; }
kernel void t(device float* x [[buffer(0)]], uint2 i [[thread_position_in_grid]],
              uint2 n [[threads_per_grid]]) { x[i.y * n.x + i.x] *= 2; }
kernel void tg(device float* x [[buffer(0)]], threadgroup float* s [[threadgroup(0)]],
               uint l [[thread_position_in_threadgroup]], uint g [[threadgroup_position_in_grid]],
               uint i [[thread_position_in_grid]]) {
    s[l] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    x[i] = s[3 - l] + 100 * g;
}
""")
    assert lib.kernel_names == ["b", "t", "tg"]
    x = np.arange(8, dtype=np.float32)
    lib.b(x, threads=8, group_size=4)
    np.testing.assert_array_equal(x, np.arange(8) + 1)
    lib.t(x, threads=(4, 2), group_size=(2, 2))
    np.testing.assert_array_equal(x, (np.arange(8) + 1) * 2)
    lib.tg(x, threads=8, group_size=4, threadgroup_memory={0: 16})
    np.testing.assert_array_equal(x, [8, 6, 4, 2, 116, 114, 112, 110])


def test_kernels_inside_namespaces(sim):
    # Metal looks a kernel up by its unqualified name (or its host_name).
    lib = sim.compile_shader("""
#include <metal_stdlib>
using namespace metal;
namespace outer {
inline float twice(float v) { return 2 * v; }
kernel void scale(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = twice(x[i]);
}
namespace inner { namespace deeper {
kernel void add_one(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] += 1;
}
template <typename T>
kernel void negate(device T* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = -x[i]; }
template [[host_name("negate_int")]] [[kernel]] void negate<int>(device int*, uint);
} }
struct Unrelated { int v; };
kernel void after_struct(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] -= 3;
}
}
namespace outer::inner {
kernel void cxx17(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] *= 10;
}
}
namespace {
kernel void anonymous(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = 7;
}
}
kernel void top_level(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = 5;
}
""")
    assert lib.kernel_names == ["add_one", "after_struct", "anonymous", "cxx17", "negate_int",
                                "scale", "top_level"]
    x = np.arange(4, dtype=np.float32)
    lib.scale(x, threads=4)
    lib.add_one(x, threads=4)
    lib.after_struct(x, threads=4)
    lib.cxx17(x, threads=4)
    np.testing.assert_array_equal(x, (np.arange(4) * 2 + 1 - 3) * 10)
    y = np.arange(4, dtype=np.int32)
    lib.negate_int(y, threads=4)
    np.testing.assert_array_equal(y, -np.arange(4))
    lib.anonymous(x, threads=2)
    lib.top_level(x, threads=1)
    np.testing.assert_array_equal(x, [5, 7, 20, 40])


def test_explicit_instantiation_with_attributes_after_template(sim):
    # `template [[host_name("x")]] kernel void f<T>(...)`: clang refuses attributes after
    # `template`; the source preparation drops them (docs/simulator.md used to list it as a gap).
    lib = sim.compile_shader("""
#include <metal_stdlib>
using namespace metal;
template <typename T>
kernel void fill(device T* x [[buffer(0)]], constant T& v [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) { x[i] = v + T(i); }
template [[host_name("fill_float")]] kernel void fill<float>(device float*, constant float&, uint);
template [[host_name("fill_" "short")]]
kernel void fill<short>(device short* x [[buffer(0)]], constant short& v [[buffer(1)]],
                        uint i [[thread_position_in_grid]]);
""")
    assert lib.kernel_names == ["fill_float", "fill_short"]
    f = np.zeros(4, np.float32)
    lib.fill_float(f, 0.5, threads=4)
    np.testing.assert_array_equal(f, np.arange(4) + 0.5)
    s = np.zeros(4, np.int16)
    lib.fill_short(s, np.int16(-3), threads=4)
    np.testing.assert_array_equal(s, np.arange(4) - 3)
