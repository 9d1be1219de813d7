"""The simulator build's choices for speed that leave results alone: msltrans's element loops
over MAX_SIM_UNROLLED_TRIPS iterations lose their unroll request (msltrans/sim/unroll.py),
and a cache entry that two processes want is built once (cache.build_lock)."""

from __future__ import annotations

import threading
import time

from msltrans.sim import cache
from msltrans.sim.unroll import MAX_SIM_UNROLLED_TRIPS, cap_unrolls


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
