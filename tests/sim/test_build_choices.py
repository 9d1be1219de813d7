"""The simulator build's choices for speed that leave results alone: msltrans's element loops
over MAX_SIM_UNROLLED_TRIPS iterations, and those over MAX_SIM_UNROLLED_RENDEZVOUS_TRIPS that
meet a SIMD-group rendezvous, lose their unroll request (msltrans/sim/unroll.py), and a cache
entry that two processes want is built once (cache.build_lock)."""

from __future__ import annotations

import threading
import time

from msltrans.sim import cache
from msltrans.sim.unroll import (
    MAX_SIM_UNROLLED_RENDEZVOUS_TRIPS,
    MAX_SIM_UNROLLED_TRIPS,
    cap_unrolls,
)


def test_long_element_loops_lose_only_their_unroll_request():
    short = "    msl_unroll for (uint msl_r = 0; msl_r < 64u; ++msl_r) {\n"
    long = "    msl_unroll for (uint r = 0; r < 128u; ++r) {\n"
    strided = "    msl_unroll for (uint msl_r = 0; msl_r < 512u; msl_r += 8u) {  // 16-byte\n"
    strided_long = "    msl_unroll for (uint msl_r = 0; msl_r < 1024u; msl_r += 8u) {\n"
    other = "    for (uint r = 0; r < 4096u; ++r) {  // no request: left alone\n"
    text = short + long + strided + strided_long + other
    out = cap_unrolls(text)
    assert MAX_SIM_UNROLLED_TRIPS == 64
    assert len(out) == len(text) and out.count("\n") == text.count("\n")
    lines = out.splitlines(keepends=True)
    assert lines[0] == short and lines[2] == strided and lines[4] == other
    assert lines[1] == " " * 15 + "for (uint r = 0; r < 128u; ++r) {\n"
    assert lines[3].strip().startswith("for (uint msl_r = 0; msl_r < 1024u")
    assert "msl_unroll" not in lines[1] + lines[3]


RENDEZVOUS_SOURCE = """\
inline float shfl(float x, ushort l) { return as_type<float>(simd_shuffle(as_type<uint>(x), l)); }
inline float twice(float x, ushort l) { return shfl(shfl(x, l), l); }  // through another
inline float plain(float x) { return x * 2.0f; }  /* simd_shuffle( in a comment */
kernel void k(device float* p [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
    float a[64];
    msl_unroll for (uint msl_r = 0; msl_r < 64u; ++msl_r) {
        a[msl_r] = twice(a[msl_r], ushort(lane ^ 1u));
    }
    msl_unroll for (uint msl_r = 0; msl_r < 64u; ++msl_r) {
        a[msl_r] = plain(a[msl_r]);  // simd_sum(a[msl_r]) in a comment: no call
    }
    msl_unroll for (uint msl_r = 0; msl_r < 8u; ++msl_r) {
        a[msl_r] = shfl(a[msl_r], ushort(lane ^ 2u));
    }
    msl_unroll for (uint msl_k__0 = 0u; msl_k__0 < 16u; ++msl_k__0) {
        msl_unroll for (uint msl_r = 0; msl_r < 4u; ++msl_r) {
            a[msl_k__0 * 4u + msl_r] += simd_sum(a[msl_r]);
        }
    }
    msl_unroll for (uint msl_r = 0; msl_r < 16u; ++msl_r) {
        if (msl_r == 3u) { threadgroup_barrier(mem_flags::mem_threadgroup); }
    }
    msl_unroll for (uint msl_r = 0; msl_r < 16u; ++msl_r)
        a[msl_r] = shfl(a[msl_r], ushort(lane ^ 4u));
    msl_unroll for (uint msl_r = 0; msl_r < 16u; ++msl_r) {
        simdgroup_multiply_accumulate(c[msl_r], x[msl_r], y[msl_r], c[msl_r]);
    }
    p[lane] = a[lane];
}
"""


def test_element_loops_that_meet_a_rendezvous_stay_loops():
    """A loop of over MAX_SIM_UNROLLED_RENDEZVOUS_TRIPS iterations whose body calls a SIMD
    function (directly, or through functions of the source), or a barrier, loses its unroll
    request; names in comments and simdgroup matrix operations do not count."""
    assert MAX_SIM_UNROLLED_RENDEZVOUS_TRIPS == 8
    text = RENDEZVOUS_SOURCE
    out = cap_unrolls(text)
    assert len(out) == len(text) and out.count("\n") == text.count("\n")
    kept = [line.strip()[:60] for line in out.splitlines() if "msl_unroll for" in line]
    assert kept == [
        "msl_unroll for (uint msl_r = 0; msl_r < 64u; ++msl_r) {",   # plain(), a comment
        "msl_unroll for (uint msl_r = 0; msl_r < 8u; ++msl_r) {",    # short enough
        "msl_unroll for (uint msl_r = 0; msl_r < 4u; ++msl_r) {",    # inner, short
        "msl_unroll for (uint msl_r = 0; msl_r < 16u; ++msl_r) {",   # matrix operations
    ]
    removed = [a for a, b in zip(text.splitlines(), out.splitlines(), strict=True) if a != b]
    assert len(removed) == 4
    assert all(b in (a, a.replace("msl_unroll ", " " * len("msl_unroll ")))
               for a, b in zip(text.splitlines(), out.splitlines(), strict=True))
    assert cap_unrolls(text, max_rendezvous_trips=64) == cap_unrolls(text, 64, 64)
    assert cap_unrolls(text, 64, 64).count("msl_unroll for") == 8


def test_a_second_builder_waits_for_the_first(tmp_path, monkeypatch):
    monkeypatch.setenv("MSLTRANS_SIM_CACHE_DIR", str(tmp_path))
    events: list[str] = []
    inside = threading.Event()

    def first() -> None:
        with cache.build_lock("entry.so"):
            inside.set()
            time.sleep(0.3)
            events.append("first done")

    def second() -> None:
        inside.wait()
        with cache.build_lock("entry.so"):
            events.append("second in")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert events == ["first done", "second in"]
    with cache.build_lock("other.so"):   # other entries do not wait
        pass
