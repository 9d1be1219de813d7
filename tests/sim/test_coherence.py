"""Cross-threadgroup coherence (MSL §4.8 Memory Coherency): during one dispatch, a plain load
from a buffer that is not `coherent(device)` of bytes another threadgroup stored is reported
(CoherenceError), naming the buffer, the byte, both threads and both lines; the same load
through a `coherent(device)` buffer reads the value. `coherent(device)` needs MSL 3.2."""

from __future__ import annotations

import re

import numpy as np
import pytest

from msltrans.sim import CoherenceError, CompileError, LaunchError, compile_shader

N = 8   # threads per threadgroup
SHIFT = 3   # the reader's thread t reads element (t + SHIFT) % N

# Threadgroup 0 publishes data with plain stores, a fence and an atomic flag (release);
# every other threadgroup spins on the flag (acquire), fences, and reads the data with plain
# loads: correct only when `data` is coherent(device).
PUBLISH = """#include <metal_stdlib>
using namespace metal;
kernel void publish(QUAL float* data [[buffer(0)]],
                    device atomic_uint* flag [[buffer(1)]],
                    device float* out [[buffer(2)]],
                    uint tg [[threadgroup_position_in_grid]],
                    uint t [[thread_position_in_threadgroup]]) {
    if (tg == 0) {
        data[t] = float(t) * 2.0f + 1.0f;
        threadgroup_barrier(mem_flags::mem_device);
        atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
        if (t == 0) atomic_store_explicit(flag, 1u, memory_order_relaxed);
        return;
    }
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0u) {}
    atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
    out[tg * NT + t] = data[(t + SHIFT) % NT];
}
""".replace("NT", str(N)).replace("SHIFT", str(SHIFT))

# Each threadgroup writes its own slice, synchronises on a barrier and reads a neighbour's
# element of its own slice; the atomic counter makes the source a checked one.
OWN = """#include <metal_stdlib>
using namespace metal;
kernel void own(device float* data [[buffer(0)]], device atomic_uint* count [[buffer(1)]],
                device float* out [[buffer(2)]], uint tg [[threadgroup_position_in_grid]],
                uint t [[thread_position_in_threadgroup]]) {
    data[tg * NT + t] = float(tg * 100 + t);
    threadgroup_barrier(mem_flags::mem_device);
    out[tg * NT + t] = data[tg * NT + (t + 1) % NT];
    atomic_fetch_add_explicit(count, 1u, memory_order_relaxed);
}
""".replace("NT", str(N))


def _publish(qual: str, groups: int = 2, **launch: object) -> np.ndarray:
    lib = compile_shader(PUBLISH.replace("QUAL", qual), "publish.metal", msl_version="3.2")
    assert lib.checked
    data = np.zeros(N, np.float32)
    flag = np.zeros(1, np.uint32)
    out = np.zeros(groups * N, np.float32)
    lib.publish(data, flag, out, threads=groups * N, group_size=N, **launch)
    return out


def _published(groups: int) -> np.ndarray:
    """What the readers must see: 2 t + 1 for element t, read at (t + SHIFT) % N."""
    t = np.arange(N, dtype=np.float64)
    row = 2.0 * ((t + SHIFT) % N) + 1.0
    return np.concatenate([np.zeros(N), np.tile(row, groups - 1)])


def test_publish_acquire_read_without_coherent_is_reported(sim) -> None:  # noqa: ANN001
    with pytest.raises(CoherenceError) as caught:
        _publish("device")
    error = caught.value
    # Thread 0 of threadgroup 1 reads element SHIFT first, which thread SHIFT of group 0 stored.
    assert (error.buffer_index, error.param) == (0, "data")
    assert error.offset == SHIFT * 4
    assert error.where.group == (1, 0, 0) and error.where.local == (0, 0, 0)
    assert error.writer_group == (0, 0, 0) and error.writer_local == (SHIFT, 0, 0)
    assert not error.writer_atomic
    assert error.writer_line is not None and "data[t] = float(t)" in error.writer_line
    assert error.where.source_line is not None
    assert "out[tg * 8 + t] = data[(t + 3) % 8]" in error.where.source_line
    text = str(error)
    assert "buffer 0 (`data`) at byte offset 12" in text and "coherent(device)" in text
    assert "threadgroup (0, 0, 0), thread (3, 0, 0)" in text


@pytest.mark.parametrize("qual", ["coherent(device) device", "device coherent(device)"])
def test_publish_acquire_read_through_coherent_buffer(sim, qual: str) -> None:  # noqa: ANN001
    lib = compile_shader(PUBLISH.replace("QUAL", qual), "publish.metal", msl_version="3.2")
    assert [p.is_coherent for p in lib.publish.signature.params if p.kind == "buffer"] == [
        True, False, False]
    np.testing.assert_array_equal(_publish(qual), _published(2))


def test_many_readers_on_two_workers(sim, monkeypatch) -> None:  # noqa: ANN001
    """Threadgroups on two worker threads at once: the shadow state is shared safely, the
    report is the first reader's in the sequential order (the failed run is redone on one
    worker), and the coherent version gives every reader the published values."""
    monkeypatch.setenv("MSLTRANS_SIM_THREADS", "2")
    np.testing.assert_array_equal(_publish("coherent(device) device", groups=40),
                                  _published(40))
    with pytest.raises(CoherenceError) as caught:
        _publish("device", groups=40)
    assert caught.value.where.group == (1, 0, 0)
    assert caught.value.writer_local == (SHIFT, 0, 0)


# Threadgroup 0 writes a value with an atomic store, then raises the flag; threadgroup 1 waits
# and reads the value with a plain load.
ATOMIC_THEN_PLAIN = """#include <metal_stdlib>
using namespace metal;
kernel void k(QUAL atomic_uint* value [[buffer(0)]], device atomic_uint* flag [[buffer(1)]],
              device uint* out [[buffer(2)]], uint tg [[threadgroup_position_in_grid]]) {
    if (tg == 0) {
        atomic_store_explicit(value, 7u, memory_order_relaxed);
        atomic_store_explicit(flag, 1u, memory_order_relaxed);
        return;
    }
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0u) {}
    out[0] = ((device uint*)value)[0];
}
"""


@pytest.mark.parametrize("coherent", [False, True])
def test_plain_load_of_another_threadgroups_atomic_write(sim, coherent: bool) -> None:  # noqa: ANN001
    """The atomic reached the coherence point; the plain load of a non-coherent buffer is
    still not guaranteed to see it (reported, `writer_atomic`)."""
    qual = "coherent(device) device" if coherent else "device"
    lib = compile_shader(ATOMIC_THEN_PLAIN.replace("QUAL", qual), "atomic.metal",
                         msl_version="3.2")
    value, flag, out = (np.zeros(1, np.uint32) for _ in range(3))
    if coherent:
        lib.k(value, flag, out, threads=2, group_size=1)
        assert out[0] == 7
        return
    with pytest.raises(CoherenceError) as caught:
        lib.k(value, flag, out, threads=2, group_size=1)
    error = caught.value
    assert (error.param, error.offset, error.writer_atomic) == ("value", 0, True)
    assert error.where.group == (1, 0, 0) and error.writer_group == (0, 0, 0)
    assert "wrote with an atomic" in str(error)
    assert error.writer_line is not None and "atomic_store_explicit(value" in error.writer_line


def test_reading_what_the_own_threadgroup_stored_is_fine(sim) -> None:  # noqa: ANN001
    lib = compile_shader(OWN, "own.metal", msl_version="3.2")
    assert lib.checked
    groups = 5
    data = np.zeros(groups * N, np.float32)
    count = np.zeros(1, np.uint32)
    out = np.zeros(groups * N, np.float32)
    lib.own(data, count, out, threads=groups * N, group_size=N)
    g, t = np.divmod(np.arange(groups * N), N)
    np.testing.assert_array_equal(out, (g * 100 + (t + 1) % N).astype(np.float64))
    assert count[0] == groups * N


def test_coherent_needs_msl_3_2(sim) -> None:  # noqa: ANN001
    """MSL §4.8: coherent(device) is Metal 3.2; the kernel uses nothing else past 3.1."""
    source = ("#include <metal_stdlib>\nusing namespace metal;\nkernel void k(coherent(device) "
              "device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
              "    x[i] = float(i);\n}\n")
    x = np.zeros(4, np.float32)
    compile_shader(source, "k.metal", msl_version="3.2").k(x, threads=4)
    np.testing.assert_array_equal(x, np.arange(4.0))
    with pytest.raises(CompileError, match=r"coherent\(device\) needs MSL 3\.2 \(MSL section 4\.8"):
        compile_shader(source, "k.metal", msl_version="3.1")


def test_only_device_is_a_coherence_scope(sim) -> None:  # noqa: ANN001
    source = PUBLISH.replace("QUAL", "coherent(threadgroup) device")
    with pytest.raises(CompileError, match="MSL_SIM_COHERENT_threadgroup"):
        compile_shader(source, "publish.metal", msl_version="3.2")


def test_which_sources_are_checked(sim, monkeypatch) -> None:  # noqa: ANN001
    """auto: sources with device atomics or fences; MSLTRANS_SIM_COHERENCE=0 turns the check
    off (the load is then not reported), =1 checks every source."""
    plain = "#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* x " \
            "[[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] += 1.0f; }\n"
    assert not compile_shader(plain).checked
    monkeypatch.setenv("MSLTRANS_SIM_COHERENCE", "1")
    assert compile_shader(plain).checked
    monkeypatch.setenv("MSLTRANS_SIM_COHERENCE", "0")
    np.testing.assert_array_equal(_publish_unchecked(), _published(2))
    monkeypatch.setenv("MSLTRANS_SIM_COHERENCE", "maybe")
    with pytest.raises(LaunchError, match="MSLTRANS_SIM_COHERENCE"):
        compile_shader(plain)


@pytest.mark.parametrize("text, checked", [
    ("device atomic_uint* flag [[buffer(1)]]", True),
    ("(device metal::atomic<int>*)p", True),
    ("device const volatile atomic_int* f", True),
    ("atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);",
     True),
    ("threadgroup atomic_uint* bins [[threadgroup(0)]]", False),   # reaches one threadgroup
    ("threadgroup_barrier(mem_flags::mem_device);", False),
    ("// device atomic_uint* in a comment", False),
    ("/* atomic_thread_fence */ device float* x", False),
])
def test_sources_that_synchronise_across_threadgroups(text: str, checked: bool) -> None:
    from msltrans.sim.coherence import synchronises_across_groups

    assert synchronises_across_groups(text) is checked


def _publish_unchecked() -> np.ndarray:
    lib = compile_shader(PUBLISH.replace("QUAL", "device"), "publish.metal", msl_version="3.2")
    assert not lib.checked
    data, flag, out = np.zeros(N, np.float32), np.zeros(1, np.uint32), np.zeros(2 * N, np.float32)
    lib.publish(data, flag, out, threads=2 * N, group_size=N)
    return out


# ---- tutorial 05's layer-norm backward (spin lock, "written" flag, partial sums) ----------


def _with_coherence(source: str, coherent: bool) -> str:
    """The kernel's MSL with every device buffer parameter coherent(device), or none."""
    source = source.replace("coherent(device) ", "")
    if coherent:
        source = re.sub(r"^(\s*)device (\w+\*\s+\w+\s+\[\[buffer\()",
                        r"\1coherent(device) device \2", source, flags=re.M)
    return source


def test_layer_norm_backward_needs_coherent_buffers(sim) -> None:  # noqa: ANN001
    from msltrans.workloads.softmax_layernorm import layer_norm_bwd_dx_rows
    from tests.e2e.workloads.test_softmax_layernorm import _layer_norm_data
    from tests.support.run_kernel import compile_kernel

    M, n, groups, block = 9, 300, 4, 512
    x, w, _, dy = _layer_norm_data(M, n)
    x64, w64, dy64 = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
    mean64 = x64.mean(axis=1)
    rstd64 = 1 / np.sqrt(x64.var(axis=1) + 1e-5)
    mean, rstd = mean64.astype(np.float32), rstd64.astype(np.float32)

    def run(coherent: bool) -> tuple[np.ndarray, ...]:
        dx = np.zeros_like(x)
        part_dw, part_db = np.zeros((groups, n), np.float32), np.zeros((groups, n), np.float32)
        locks = np.zeros(2 * groups, np.int32)
        args = (dx, dy, part_dw, part_db, x, w, mean, rstd, locks, n, n)
        program = compile_kernel(layer_norm_bwd_dx_rows, args, num_warps=4, GROUPS=groups,
                                 BLOCK_N=block)
        lib = compile_shader(_with_coherence(program.source, coherent), msl_version="3.2")
        assert lib.checked
        t = program.threads_per_group
        getattr(lib, program.kernel_name)(
            *program.engine_args(args), threads=(M * t, 1, 1), group_size=(t, 1, 1),
            arg_casts=program.arg_casts, buffer_alignment=program.sim_alignment)
        return dx, part_dw, part_db, locks

    with pytest.raises(CoherenceError) as caught:
        run(coherent=False)
    error = caught.value
    # Row 4 is the second program of lock group 0: it reads group 0's "written" flag, which
    # program 0 set with an atomic exchange (locks[GROUPS + 0], int32).
    assert (error.param, error.offset) == ("locks_ptr", (groups + 0) * 4)
    assert error.where.group == (4, 0, 0) and error.writer_group == (0, 0, 0)
    assert error.writer_atomic
    assert any("tt.load" in line for line in error.where.triton_lines)
    assert "tt.atomic_rmw" in str(error)

    dx, part_dw, part_db, locks = run(coherent=True)
    xhat = (x64 - mean64[:, None]) * rstd64[:, None]
    wdy = w64 * dy64
    ref_dx = (wdy - (xhat * (xhat * wdy).mean(axis=1, keepdims=True)
                     + wdy.mean(axis=1, keepdims=True))) * rstd64[:, None]
    np.testing.assert_allclose(dx, ref_dx, rtol=1e-4, atol=1e-5)
    rows = np.arange(M) % groups
    ref_dw = np.stack([(dy64 * xhat)[rows == g].sum(axis=0) for g in range(groups)])
    ref_db = np.stack([dy64[rows == g].sum(axis=0) for g in range(groups)])
    np.testing.assert_allclose(part_dw, ref_dw, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(part_db, ref_db, rtol=1e-4, atol=1e-5)
    assert not locks[:groups].any() and (locks[groups:] == 1).all()
