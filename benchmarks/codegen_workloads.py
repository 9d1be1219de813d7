"""Table 1 of codegen_stats.py: the tutorial-shaped workloads, compiled as a launch would.

Each row compiles one kernel with a real launch's specialisation and measures the emitted
MSL (see codegen_stats.py for the columns). `BASELINE` holds the committed figures; `check`
names every figure that got worse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.proxy import kernels as K
from benchmarks.proxy.specialise import Arg, compile_specialised
from benchmarks.sim_stack import stack_facts
from msltrans.abi.limits import THREADGROUP_MEMORY_BYTES
from msltrans.lower import MslProgram

BASELINE = Path(__file__).with_name("codegen_baseline.json")
P32, P16 = Arg("*fp32"), Arg("*fp16")
_MEM_RE = re.compile(r"// msltrans-mem: (\w+) elements=(\d+) width=(\d+) bytes=(\d+) "
                     r"accesses=(\d+)")
# A per-thread device pointer: an array of them (`device half* p_3[8];`) or one scalar.
_POINTER_RE = re.compile(r"^\s*(?:const )?device [\w ]+\* (?:const )?\w+(?:\[(\d+)\])?[;= ]",
                         re.M)


def pointer_words(body: str) -> int:
    """64-bit device pointers the kernel body declares per thread (each array element one)."""
    return sum(int(m.group(1) or 1) for m in _POINTER_RE.finditer(body))


def _i(v: int) -> Arg:
    return Arg("i32", v)


def _matmul(dtype: Arg, bm: int, bn: int, bk: int, warps: int) -> Callable[[], MslProgram]:
    args = dict(a_ptr=dtype, b_ptr=dtype, c_ptr=P32, M=_i(4096), N=_i(4096), K=_i(4096),
                s_am=_i(4096), s_ak=_i(1), s_bk=_i(4096), s_bn=_i(1), s_cm=_i(4096),
                s_cn=_i(1))
    return lambda: compile_specialised(K.tiled_matmul, args, dict(BM=bm, BN=bn, BK=bk, GROUP=8),
                                       warps)


def _layer_norm(dtype: Arg) -> Callable[[], MslProgram]:
    args = dict(x_ptr=dtype, y_ptr=dtype, w_ptr=dtype, b_ptr=dtype, mean_ptr=P32, rstd_ptr=P32,
                row_stride=_i(4096), N=_i(4096), eps=Arg("fp32", 1e-5))
    return lambda: compile_specialised(K.layer_norm_fwd_rows, args, dict(BLOCK=1024), 8)


def _attention(head: int, bm: int, bn: int, warps: int, causal: bool) -> Callable[[], MslProgram]:
    args = dict(q_ptr=P16, k_ptr=P16, v_ptr=P16, o_ptr=P16, n_ctx=_i(4096),
                scale=Arg("fp32", 0.18))
    return lambda: compile_specialised(K.attn_fwd, args, dict(HEAD=head, BM=bm, BN=bn,
                                                               CAUSAL=causal), warps)


def _tutorial_attention(head: int, causal: bool, bm: int = 64) -> Callable[[], MslProgram]:
    """The tutorial-06-shaped forward (msltrans/workloads/attention.py: device descriptors, the
    online softmax in a helper, causal as two sweeps)."""
    def build() -> MslProgram:
        from msltrans.workloads.attention import flash_attn_fwd

        args = dict(sm_scale=Arg("fp32", 0.125), lse_ptr=P32, Z=_i(4), H=_i(16), q=P16,
                    k=P16, v=P16, o=P16, N_CTX=_i(4096))
        return compile_specialised(flash_attn_fwd, args, dict(
            HEAD_DIM=head, BLOCK_M=bm, BLOCK_N=32, FP8=False, CAUSAL=causal), 4)
    return build


def _tutorial_backward(head: int, causal: bool) -> Callable[[], MslProgram]:
    """The tutorial-06-shaped backward (msltrans/workloads/attention.py, tutorial block sizes:
    dK/dV of 128 keys against 32-query steps, then dQ of 128 queries against 32-key steps)."""
    def build() -> MslProgram:
        from msltrans.workloads.attention import flash_attn_bwd

        args = dict(q_ptr=P16, k_ptr=P16, v_ptr=P16, sm_scale=Arg("fp32", 0.125), do_ptr=P16,
                    dq_ptr=P16, dk_ptr=P16, dv_ptr=P16, lse_ptr=P32, delta_ptr=P32,
                    stride_z=_i(16 * 1024 * head), stride_h=_i(1024 * head),
                    stride_tok=_i(head), stride_d=_i(1), H=_i(16), N_CTX=_i(1024))
        return compile_specialised(flash_attn_bwd, args, dict(
            BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32, SLICE=2, HEAD_DIM=head,
            CAUSAL=causal), 4)
    return build


WORKLOADS: list[tuple[str, Callable[[], MslProgram]]] = [
    ("01 vector add fp32 w4", lambda: compile_specialised(
        K.vadd, dict(a_ptr=P32, b_ptr=P32, out_ptr=P32, n=_i(1 << 20)), dict(BLOCK=1024), 4)),
    ("02 softmax fp32 4096 w8", lambda: compile_specialised(
        K.row_softmax_kernel, dict(out_ptr=P32, in_ptr=P32, in_stride=_i(4096),
                                   out_stride=_i(4096), n_rows=_i(4096), n_cols=_i(4096)),
        dict(BLOCK=4096, STAGES=None), 8)),
    ("03 matmul fp16 64x64x32 w4", _matmul(P16, 64, 64, 32, 4)),
    ("03 matmul fp32 64x64x32 w4", _matmul(P32, 64, 64, 32, 4)),
    ("03 matmul fp16 128x64x32 w4", _matmul(P16, 128, 64, 32, 4)),
    ("03 matmul fp16 128x128x32 w8", _matmul(P16, 128, 128, 32, 8)),
    ("03 matmul fp32 128x64x32 w4", _matmul(P32, 128, 64, 32, 4)),
    # fp32 128x128 at BK 32 would fill 32 KB only unpadded: the proxy's row takes BK 16
    ("03 matmul fp32 128x128x16 w8", _matmul(P32, 128, 128, 16, 8)),
    ("05 layer norm fwd fp16 w8", _layer_norm(P16)),
    ("05 layer norm fwd fp32 w8", _layer_norm(P32)),
    ("attention fwd fp16 d64 64x32 w4", _attention(64, 64, 32, 4, False)),
    ("attention fwd fp16 d64 causal", _attention(64, 64, 32, 4, True)),
    ("attention fwd fp16 d128 64x32 w4", _attention(128, 64, 32, 4, False)),
    # at d128 a 64-row Q tile and the K/V tiles exceed 32 KB together: they share one region
    # (4 barriers per step); 32 rows, MLX's choice, keep each tile in place (2 barriers)
    ("attention fwd fp16 d128 32x32 w4", _attention(128, 32, 32, 4, False)),
    ("attention fwd fp16 d64 64x64 w8", _attention(64, 64, 64, 8, False)),
    ("06 flash_attn_fwd fp16 d64", _tutorial_attention(64, False)),
    ("06 flash_attn_fwd fp16 d64 causal", _tutorial_attention(64, True)),
    ("06 flash_attn_fwd fp16 d128 32x32", _tutorial_attention(128, False, 32)),
    ("row sum fp32 4x1024 w4", lambda: compile_specialised(
        K.row_sums, dict(x_ptr=P32, out_ptr=P32, stride=_i(4096), cols=_i(4096)),
        dict(ROWS=4, BLOCK=1024), 4)),
]


# Threadgroup budget rows: kernels measured from their MSL alone (no simulator build: the
# backward's clang -O2 build takes minutes), threadgroup bytes checked like table 1's.
BUDGET: list[tuple[str, Callable[[], MslProgram]]] = [
    ("06 flash_attn_bwd fp16 d64", _tutorial_backward(64, False)),
    ("06 flash_attn_bwd fp16 d64 causal", _tutorial_backward(64, True)),
    ("06 flash_attn_bwd fp16 d128", _tutorial_backward(128, False)),
    ("06 flash_attn_bwd fp16 d128 causal", _tutorial_backward(128, True)),
]
_PATH_RE = re.compile(r"// msltrans-dot: path=(\w+)")


def measure_budget(program: MslProgram) -> dict[str, Any]:
    """Threadgroup bytes, the largest operand tiles one dot stages (the dots of these kernels
    take turns in one region), the headroom under Metal's 32 KB and the dots' paths (each
    distinct path once, in order of first use)."""
    paths = list(dict.fromkeys(_PATH_RE.findall(program.source)))
    largest = max((int(b) for b in _OPERAND_RE.findall(program.source)), default=0)
    return {"tg bytes": program.shared_bytes, "largest dot": largest or "-",
            "headroom": THREADGROUP_MEMORY_BYTES - program.shared_bytes,
            "paths": "+".join(paths)}


_DOT_RE = re.compile(r"^\s*// tt\.dot(?:_scaled)?\s+(\S+)", re.M)
_OPERAND_RE = re.compile(r"// msltrans-dot: .*\boperand_bytes=(\d+)")


def operand_bytes(source: str) -> int:
    """Threadgroup bytes the kernel's dots need for their staged operand tiles (A and B as
    staged, padding included): the sum over its tt.dot ops, each counted once however many
    times its loop is emitted (a causal attention's two sweeps)."""
    need: dict[str, int] = {}
    site = ""
    for line in source.splitlines():
        dot = _DOT_RE.match(line)
        if dot:
            site = dot.group(1)
        found = _OPERAND_RE.search(line)
        if found:
            need[site] = int(found.group(1))
    return sum(need.values())


def measure(program: MslProgram, loop_text: Callable[[str], str],
            register_words: Callable[[str], int]) -> dict[str, Any]:
    src = program.source
    body = src[src.index("kernel void"):]
    total = vec = accesses = 0
    for m in _MEM_RE.finditer(src):
        elements, width, n = int(m.group(2)), int(m.group(3)), int(m.group(5))
        total += elements
        vec += elements if width > 1 else 0
        accesses += n
    stack = stack_facts(src, program.kernel_name)
    return {
        "vec%": round(100 * vec / total) if total else 100,
        "acc/thr": accesses,
        "regs/thr": register_words(body),
        "ptr/thr": pointer_words(body[body.index("{"):]),
        "stack": stack["array_bytes"],
        "frame": stack["frame_bytes"],
        "bar/iter": loop_text(src).count("threadgroup_barrier("),
        "tg bytes": program.shared_bytes,
        "operands": operand_bytes(src) or "-",
        "unpadded": len(re.findall(r"// msltrans-dot: .* pad=no", src)),
    }


# Figures that must not get worse, and which direction is worse.
CHECKED = {"vec%": "lower", "acc/thr": "higher", "ptr/thr": "higher", "stack": "higher",
           "bar/iter": "higher", "tg bytes": "higher", "unpadded": "higher"}


def check(rows: dict[str, dict[str, Any]], baseline: dict[str, dict[str, Any]]) -> list[str]:
    bad = []
    for name, want in baseline.items():
        got = rows.get(name)
        if got is None:
            bad.append(f"{name}: no longer measured")
            continue
        for key, worse in CHECKED.items():
            if key not in want:  # a figure newer than the baseline: nothing to compare yet
                continue
            g, w = got[key], want[key]
            if (worse == "lower" and g < w) or (worse == "higher" and g > w):
                bad.append(f"{name}: {key} {w} -> {g}")
    return bad


def load_baseline() -> dict[str, dict[str, Any]]:
    return json.loads(BASELINE.read_text()) if BASELINE.exists() else {}


def write_baseline(rows: dict[str, dict[str, Any]]) -> None:
    keep = {name: {k: r[k] for k in CHECKED if k in r} for name, r in rows.items()}
    BASELINE.write_text(json.dumps(keep, indent=1, sort_keys=True) + "\n")
