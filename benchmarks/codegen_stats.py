"""Structure of the generated code, measured without a GPU: a regression shows up in CI.

Table 1, every kernel of the project's tutorial-shaped workloads, compiled with the
specialisation a real launch gets (benchmarks/proxy/specialise.py: 16-byte-aligned pointers
into buffers under 2 GB, integers divisible by 16, integers equal to 1 as constants):

  vec%        share of the elements a thread loads/stores from device memory that move
              in vector accesses (from the `// msltrans-mem:` lines the lowering writes)
  acc/thr     device-memory instructions per thread, each load/store op counted once
  regs/thr    32-bit register words the kernel declares per thread (no liveness)
  ptr/thr     64-bit device pointers the kernel declares per thread (each element of a
              pointer array one): pointers into buffers under 2 GB that only address are
              32-bit offsets instead (msltrans/lower/memory/pointer_offsets.py)
  stack       bytes of the kernel's own variables (register arrays, scalars) that stay in
              memory in the simulator's clang -O2 build (benchmarks/sim_stack.py)
  frame       the kernel function's frame in that build (-fstack-usage: x86-64 spills and
              the simulator's own objects included)
  bar/iter    threadgroup barriers in one iteration of the first loop (or the kernel);
              for attention: per KV step
  tg bytes    threadgroup memory of the kernel
  operands    threadgroup bytes its tt.dot operand tiles need (A and B as staged, padded;
              each dot once): a simdgroup GEMM's epilogue moves C in row passes through that
              same region (lower/dot/simdgroup.pass_rows), so there tg bytes = operands
  unpadded    tt.dot operand tiles staged without the 16-byte row padding (bank-conflict
              prone; `pad=no` on the lowering's `// msltrans-dot:` line)

Table 1b, kernels too large for the simulator build of table 1 (tutorial 06's backward),
from their MSL alone: tg bytes, largest dot (the most operand bytes one dot stages: these
dots take turns in one region), headroom (bytes left of Metal's 32 KB) and the dots' paths;
tg bytes is checked against the baseline like table 1's.

Table 2, tt.dot kernels on the path the lowering picks and on the forced fallbacks:

  path        the dot path (fragment | simdgroup | registers | scratch), from the lowering's own
              `// msltrans-dot:` stats line
  acc         simdgroup paths: where C comes from each step — resident (a K loop's
              accumulator kept in simdgroup matrices, lower/dot/resident.py), staged (through
              scratch every step), regs (the fragment path: this thread's registers ARE the
              matrices' elements, lower/dot/fragment_mma.py), zero (filled); "-" for the
              other paths
  mma/step    simdgroup MMAs one tt.dot executes (all simdgroups; one K step of the loop)
  mma/sg      ... of those, the most one simdgroup executes (the critical path)
  tg bytes    threadgroup memory of the whole kernel (MslProgram.shared_bytes)
  operands    ... of it, what the dots' staged operand tiles need (as in table 1)
  bar/step    threadgroup_barrier calls per K step: counted in the MSL text of the scf.for
              body (or the whole kernel when there is no loop)
  regs/thr    32-bit register words each thread declares in the kernel
  regs/step   ... declared inside one K step (the loop body)
  fma/thr     fma links one thread runs per tt.dot on the register/scratch paths

Table 3, ragged kernels run on the simulator's profiler: the share of their load and store
bytes in 16-byte accesses at run time (benchmarks/codegen_ragged.py says how).

    python -m benchmarks.codegen_stats                 # all three tables
    python -m benchmarks.codegen_stats --ragged-only   # table 3
    python -m benchmarks.codegen_stats --check         # exit 1 on a regression of 1 / 1b
    python -m benchmarks.codegen_stats --write-baseline  # after an intended change
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from benchmarks.codegen_ragged import rows_table as ragged_rows
from benchmarks.codegen_workloads import (
    BASELINE,
    BUDGET,
    WORKLOADS,
    check,
    load_baseline,
    measure,
    measure_budget,
    operand_bytes,
    write_baseline,
)
from msltrans.lower import MslProgram
from msltrans.lower.dot.info import dot_records
from msltrans.toolchain import lower_with_dot_path as compile_with
from msltrans.workloads.dot_kernels import (
    batched_dot_kernel,
    chained_dot_kernel,
    k_loop_variant_kernel,
)
from msltrans.workloads.grouped_matmul import grouped_matmul_kernel

_WORD_BYTES = {"bool": 1, "char": 1, "uchar": 1, "short": 2, "ushort": 2, "half": 2,
               "bfloat": 2, "int": 4, "uint": 4, "float": 4, "long": 8, "ulong": 8}
_ARRAY_RE = re.compile(r"^\s+(?:device \w+\* |(\w+) )\w+((?:\[\d+\])+);", re.M)
_MATRIX_RE = re.compile(r"^\s+simdgroup_\w+8x8 ([^;]+);", re.M)


def _block_after(lines: list[str], start: int) -> list[str]:
    """The lines of the brace block opened on `lines[start]` (the loop of an scf.for)."""
    depth, out = 0, []
    for line in lines[start:]:
        depth += line.count("{") - line.count("}")
        out.append(line)
        if depth <= 0 and len(out) > 1:
            break
    return out


def k_step_text(source: str) -> str:
    lines = source.splitlines()
    for i, line in enumerate(lines):
        if "// scf.for" in line:
            # The loop itself is the first `for` after it whose block holds lowered ops (the
            # element loops copying the carried values in come first).
            for j in range(i + 1, len(lines)):
                if lines[j].lstrip().startswith("for ("):
                    block = _block_after(lines, j)
                    if any(re.match(r"\s*// (tt|arith|ttg)\.", ln) for ln in block):
                        return "\n".join(block)
    return source[source.index("kernel void"):]


def _extent(dims: str) -> int:
    n = 1
    for d in re.findall(r"\d+", dims):
        n *= int(d)
    return n


def register_words(body: str) -> int:
    bytes_ = 0
    for m in _ARRAY_RE.finditer(body):
        elem = m.group(1)
        bytes_ += _extent(m.group(2)) * (_WORD_BYTES.get(elem, 8) if elem else 8)
    words = bytes_ // 4
    for m in _MATRIX_RE.finditer(body):
        for decl in m.group(1).split(","):
            words += 2 * _extent(decl)
    return words


def row(name: str, program: MslProgram) -> dict[str, Any]:
    stats = dot_records(program.source)
    body = program.source[program.source.index("kernel void"):]
    step = k_step_text(program.source)
    paths = "+".join(s["path"] for s in stats)
    fma = sum(int(s["regs_out"]) * int(s["k"]) for s in stats
              if s["path"] not in ("simdgroup", "fragment"))
    return {
        "kernel": name, "path": paths,
        "acc": "+".join(s.get("c", "-") for s in stats),
        "mma/step": sum(int(s.get("mma", 0)) for s in stats),
        "mma/sg": sum(int(s.get("mma_per_simdgroup", 0)) for s in stats),
        "tg bytes": program.shared_bytes,
        "operands": operand_bytes(program.source) or "-",
        "bar/step": step.count("threadgroup_barrier("),
        "regs/thr": register_words(body),
        "regs/step": register_words(step),
        "fma/thr": fma,
    }


def _tutorial(dtype: str, blocks: tuple[int, int, int], num_warps: int, path: str) -> MslProgram:
    sig = {"a_ptr": dtype, "b_ptr": dtype, "c_ptr": "*fp16"}
    sig.update({n: "i32" for n in ("M", "N", "K", "sa_m", "sa_k", "sb_k", "sb_n", "sc_m",
                                   "sc_n")})
    bm, bn, bk = blocks
    return compile_with(grouped_matmul_kernel, sig, num_warps, path, BM=bm, BN=bn, BK=bk,
                        GROUP_M=8, EPILOGUE="")


def kernels() -> list[tuple[str, Any]]:
    f32 = {n: "*fp32" for n in ("a_ptr", "b_ptr", "c_ptr", "out_ptr")}
    chain_sig = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "out_ptr": "*fp32"}
    out: list[tuple[str, Any]] = []
    for path in ("auto", "registers", "scratch"):
        out += [
            (f"tutorial03 fp16 64x64x32 w4 [{path}]",
             lambda p=path: _tutorial("*fp16", (64, 64, 32), 4, p)),
            (f"tutorial03 fp32 64x64x16 w4 [{path}]",
             lambda p=path: _tutorial("*fp32", (64, 64, 16), 4, p)),
            (f"chained fp16 32x64x32 w4 [{path}]",
             lambda p=path: compile_with(chained_dot_kernel, chain_sig, 4, p, M=32, N=64, D=32)),
            (f"batched fp32 4x16x16x16 w4 [{path}]",
             lambda p=path: compile_with(batched_dot_kernel, f32, 4, p, B=4, M=16, N=16, K=16)),
        ]
    variant_sig = dict(f32, aux_ptr="*fp32", K="i32")
    for mode in ("plain", "scaled"):  # the resident pattern, and acc = dot(a, b, acc) * 2
        out.append((f"k-loop {mode} fp32 32x32x16 w4 [auto]",
                    lambda m=mode: compile_with(k_loop_variant_kernel, variant_sig, 4, M=32,
                                                N=32, BK=16, MODE=m)))
    return out


def _print(rows: list[dict[str, Any]]) -> None:
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    print("  ".join(c.ljust(widths[c]) for c in cols))
    for r in rows:
        print("  ".join(str(r[c]).ljust(widths[c]) for c in cols))


def workload_rows() -> dict[str, dict[str, Any]]:
    return {name: measure(build(), k_step_text, register_words) for name, build in WORKLOADS}


def budget_rows() -> dict[str, dict[str, Any]]:
    return {name: measure_budget(build()) for name, build in BUDGET}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="fail on a regression of table 1")
    ap.add_argument("--write-baseline", action="store_true", help="record table 1")
    ap.add_argument("--workloads-only", action="store_true", help="skip tables 2 and 3")
    ap.add_argument("--ragged-only", action="store_true", help="table 3 alone")
    a = ap.parse_args()
    if a.ragged_only:
        _print(ragged_rows())
        return 0
    work = workload_rows()
    _print([{"kernel": name, **r} for name, r in work.items()])
    budget = budget_rows()
    print()
    _print([{"kernel": name, **r} for name, r in budget.items()])
    work.update(budget)
    if a.write_baseline:
        write_baseline(work)
        print(f"wrote {BASELINE}")
    if a.check:
        bad = check(work, load_baseline())
        for line in bad:
            print("REGRESSION:", line)
        if bad:
            return 1
    if not (a.workloads_only or a.check):
        print()
        _print([row(name, build()) for name, build in kernels()])
        print()
        _print(ragged_rows())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
