"""Kernel libraries link the C math library (compiler.SYSTEM_LIBS), so their libm references
carry its default symbol versions. Unversioned, the dynamic linker binds them to the oldest
versions: glibc's error-handling wrappers (exp2f@GLIBC_2.2.5), slower and otherwise the same
(tools below compare them)."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import msltrans.sim as sim

SOURCE = """#include <metal_stdlib>
using namespace metal;
kernel void maths(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = exp2(x[i]) + log2(x[i] + 2.0f) + exp(x[i] * 0.5f) + log(x[i] + 3.0f);
}
"""


def _dynamic_symbols(path: str) -> dict[str, str]:
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    out = subprocess.run([readelf, "--dyn-syms", "--wide", path], capture_output=True,
                         text=True, check=True).stdout
    symbols = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[6] == "UND":
            name, _, version = fields[7].partition("@")
            symbols[name] = version
    return symbols


def test_kernel_libraries_bind_libm_by_version():
    lib = sim.compile_shader(SOURCE, name="libm_versions.metal")
    x = np.linspace(-1.5, 3, 64, dtype=np.float32)   # every log argument positive
    out = x.copy()
    lib.maths(out, threads=64, group_size=64)
    want = (np.exp2(x.astype(np.float64)) + np.log2(x + 2.0) + np.exp(x * 0.5)
            + np.log(x + 3.0))
    np.testing.assert_allclose(out, want, rtol=1e-6)
    symbols = _dynamic_symbols(str(lib.path))
    for name in ("exp2f", "log2f", "expf", "logf"):
        assert name in symbols, sorted(symbols)
        # The default version (exp2f@GLIBC_2.27 on glibc), not none (the oldest: a wrapper).
        assert re.fullmatch(r"@?GLIBC_[\d.]+", symbols[name]), (name, symbols[name])


# Every float input of the one-argument functions, a sample of powf's pairs: the oldest
# version (what an unversioned reference bound to) against the default one. NaN results
# count as equal: the simulator canonicalises what a library call returns (nan_canon.py), and
# the wrappers differ only in a NaN's sign (logf, log2f of negative numbers).
COMPARE = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float from(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static int same(float a, float b) { return (a != a && b != b) || bits(a) == bits(b); }
int main(int argc, char **argv) {
    void *m = dlopen("libm.so.6", RTLD_NOW);
    void *old = dlvsym(m, argv[1], argv[2]), *cur = dlvsym(m, argv[1], argv[3]);
    if (!old || !cur) { printf("missing\n"); return 2; }
    unsigned long long differ = 0;
    if (atoi(argv[4]) == 1) {
        float (*f)(float) = old, (*g)(float) = cur;
        for (uint64_t u = 0; u <= 0xffffffffull; ++u)
            differ += !same(f(from((uint32_t)u)), g(from((uint32_t)u)));
    } else {
        float (*f)(float, float) = old, (*g)(float, float) = cur;
        uint64_t s = 88172645463325252ull;
        for (uint64_t i = 0; i < 100000000ull; ++i) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            float x = from((uint32_t)s), y = from((uint32_t)(s >> 32));
            if (i & 1) y = from(((uint32_t)(s >> 32) & 0x83ffffffu) | 0x3c000000u);
            differ += !same(f(x, y), g(x, y));
        }
    }
    printf("%llu\n", differ);
    return 0;
}
"""


@pytest.mark.slow
@pytest.mark.parametrize("name,old,new,arity", [
    ("exp2f", "GLIBC_2.2.5", "GLIBC_2.27", 1), ("expf", "GLIBC_2.2.5", "GLIBC_2.27", 1),
    ("log2f", "GLIBC_2.2.5", "GLIBC_2.27", 1), ("logf", "GLIBC_2.2.5", "GLIBC_2.27", 1),
    ("exp10f", "GLIBC_2.2.5", "GLIBC_2.32", 1), ("powf", "GLIBC_2.2.5", "GLIBC_2.27", 2)])
def test_libm_versions_give_the_same_values(tmp_path, name, old, new, arity):
    from msltrans.sim.compiler import find_compiler

    source = tmp_path / "compare.c"
    source.write_text(COMPARE)
    binary = tmp_path / "compare"
    subprocess.run([*find_compiler().c_argv(), "-O2", "-o", str(binary), str(source), "-ldl"],
                   check=True, capture_output=True)
    out = subprocess.run([str(binary), name, old, new, str(arity)], capture_output=True,
                         text=True, timeout=600).stdout.strip()
    if out == "missing":
        pytest.skip(f"this C library has no {name}@{old} and {name}@{new}")
    assert out == "0", f"{name}: {out} inputs differ"
