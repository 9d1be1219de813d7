"""`coherent(device)` on exactly the buffers one program writes and another reads after an
acquire (lower/memory/coherence.py; MSL section 4.8), refused below MSL 3.2, and the launcher's
refusal of a coherent buffer that overlaps another argument."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import msltrans.sim as sim
from msltrans.errors import MetalNonRecoverableError
from msltrans.ir import read_module
from msltrans.lower import MslProgram, lower_module
from msltrans.toolchain import to_ttgir
from msltrans.workloads.softmax_layernorm import layer_norm_bwd_dx_rows


@triton.jit
def publish_then_read(data_ptr, flag_ptr, out_ptr, N: tl.constexpr):
    """Program 0 writes `data` and raises the flag (release); every other program waits for
    the flag (acquire) and copies `data` into its row of `out`."""
    pid = tl.program_id(0)
    cols = tl.arange(0, N)
    if pid == 0:
        tl.store(data_ptr + cols, cols * 3 + 1)
        tl.debug_barrier()
        tl.atomic_xchg(flag_ptr, 1, sem="release")
    else:
        while tl.atomic_add(flag_ptr, 0, sem="acquire") == 0:
            pass
        tl.store(out_ptr + pid * N + cols, tl.load(data_ptr + cols))


@triton.jit
def split_k_like(a_ptr, out_ptr, N: tl.constexpr):
    """Loads, then one acq_rel atomic per element at the end: nothing is read after it."""
    cols = tl.arange(0, N)
    tl.atomic_add(out_ptr + cols, tl.load(a_ptr + cols) * 2)


@triton.jit
def counted_reads(x_ptr, count_ptr, out_ptr, N: tl.constexpr, STEPS: tl.constexpr):
    """A loop reading `x` after acq_rel atomics of its earlier iterations; `x` is never
    written, so it needs no coherence."""
    cols = tl.arange(0, N)
    acc = tl.zeros([N], dtype=tl.int32)
    for i in range(STEPS):
        acc += tl.load(x_ptr + i * N + cols)
        tl.atomic_add(count_ptr, 1)
    tl.store(out_ptr + tl.program_id(0) * N + cols, acc)


def _lower(fn, signature: dict[str, str], constexprs: dict, version: int = 320,  # noqa: ANN001
           warps: int = 4, aligned: tuple[str, ...] = ()) -> MslProgram:
    mod = to_ttgir(fn, signature, constexprs, warps, divisible_by_16=aligned)
    return lower_module(read_module(mod), msl_version_target=version)


def _coherent_params(source: str) -> set[str]:
    return set(re.findall(r"coherent\(device\) device \w+\* (\w+) \[\[buffer", source))


LN_SIG = {"dx_ptr": "*fp32", "dy_ptr": "*fp32", "dw_part_ptr": "*fp32", "db_part_ptr": "*fp32",
          "x_ptr": "*fp32", "w_ptr": "*fp32", "mean_ptr": "*fp32", "rstd_ptr": "*fp32",
          "locks_ptr": "*i32", "row_stride": "i32", "N": "i32"}


def test_layer_norm_backward_partials_and_flags_are_coherent() -> None:
    program = _lower(layer_norm_bwd_dx_rows, LN_SIG, {"GROUPS": 4, "BLOCK_N": 512})
    # the locked partial sums and the lock word array (its "written" flags are read plainly
    # after the lock's acquire); inputs read before the lock and dx (never read) are not
    assert _coherent_params(program.source) == {"dw_part_ptr", "db_part_ptr", "locks_ptr"}
    assert program.coherent_buffers == (2, 3, 8)
    # every pointer into a coherent buffer keeps the qualifier (Metal never drops it
    # implicitly); no cast of a coherent pointer to a plain device pointer outside atomics
    assert re.search(r"coherent\(device\) device int\* lock_\d+ = locks_ptr", program.source)
    assert "needs MSL 3.2" in program.source and "coherent" in program.source.split("#endif")[0]


def test_refused_below_3_2() -> None:
    with pytest.raises(MetalNonRecoverableError, match=r"needs MSL 3\.2 \(MSL §4\.8.*macOS 15"):
        _lower(layer_norm_bwd_dx_rows, LN_SIG, {"GROUPS": 4, "BLOCK_N": 512}, version=310)
    with pytest.raises(MetalNonRecoverableError, match=r"needs MSL 3\.2 \(MSL §4\.8.*macOS 15"):
        _lower(publish_then_read, {"data_ptr": "*i32", "flag_ptr": "*i32", "out_ptr": "*i32"},
               {"N": 256}, version=310, warps=2)


def test_no_qualifier_where_nothing_is_read_after_an_acquire() -> None:
    a = _lower(split_k_like, {"a_ptr": "*fp32", "out_ptr": "*fp32"}, {"N": 64})
    assert "coherent(device)" not in a.source and a.coherent_buffers == ()
    b = _lower(counted_reads, {"x_ptr": "*i32", "count_ptr": "*i32", "out_ptr": "*i32"},
               {"N": 32, "STEPS": 3})
    assert "coherent(device)" not in b.source and b.coherent_buffers == ()


def test_publish_then_read_runs_with_its_data_coherent() -> None:
    """On the simulator's coherence check (msltrans/sim/coherence.py): without the qualifier
    the readers' loads are reported (CoherenceError naming both threads)."""
    program = _lower(publish_then_read, {"data_ptr": "*i32", "flag_ptr": "*i32",
                                         "out_ptr": "*i32"}, {"N": 256}, warps=2,
                     aligned=("data_ptr", "out_ptr"))
    assert _coherent_params(program.source) == {"data_ptr"}
    assert "coherent(device) device const int4*" in program.source \
        or "coherent(device) device const uint4*" in program.source  # vector loads keep it
    lib = sim.compile_shader(program.source, msl_version="3.2")
    data, flag = np.zeros(256, np.int32), np.zeros(1, np.int32)
    out = np.full((5, 256), -1, np.int32)
    t = program.threads_per_group
    getattr(lib, program.kernel_name)(*program.engine_args((data, flag, out)),
                                      threads=(5 * t, 1, 1), group_size=(t, 1, 1),
                                      arg_casts=program.arg_casts)
    want = np.arange(256, dtype=np.int64) * 3 + 1
    assert (data == want).all() and (out[1:] == want).all() and flag[0] == 1


def test_launcher_refuses_a_coherent_buffer_overlapping_another(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("MSLTRANS_ENGINE", "sim")
    data = torch.zeros(128, dtype=torch.int32)
    flag = torch.zeros(1, dtype=torch.int32)
    out = torch.full((2, 64), -1, dtype=torch.int32)
    with pytest.raises(MetalNonRecoverableError, match=r"buffer 0, .*coherent\(device\).* "
                                                       r"overlaps buffer 2"):
        publish_then_read[(2,)](data, flag, data[32:], N=64, num_warps=2)
    publish_then_read[(2,)](data, flag, out, N=64, num_warps=2)
    assert out[1].tolist() == [3 * i + 1 for i in range(64)]
