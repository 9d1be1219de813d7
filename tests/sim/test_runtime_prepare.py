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
