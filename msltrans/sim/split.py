"""Compiling kernels with a very large function: optimised once, code-generated on two cores.

The largest simulator builds are kernels whose per-thread function is tens of thousands of
instructions once clang's front end is done (the attention backward of
tests/e2e/workloads/test_attention.py: 24,800 instructions in 2,900 blocks, 12,000 blocks
and 117,000 instructions after -O2's unrolling, plus its lanes function of 65,000). One
optimise-and-generate step spent ~10 s of CPU in -O2 (GVN alone 3-4 s) and ~7 s in code
generation. From SPLIT_MIN_INSTRUCTIONS instructions in one function of the front end's IR
the build instead:

1. optimises the module as before (-O2, the lanes pass) into bitcode, without GVN's partial
   redundancy elimination and the SLP vectoriser (OPT_FLAGS);
2. moves the lanes functions into a module of their own (`llvm-extract`), the per-thread
   code and everything else staying in the other, and code-generates the two at once, one
   process a core: the lanes functions at -O2, the per-thread code at REST_CODEGEN (-O0).
   Lanes mode, the default wherever the pass gave a kernel a lanes entry, never runs the
   per-thread code; MSLTRANS_SIM_LANES=fibers does, about 2x slower than at -O2;
3. links the two objects into the kernel library.

On the largest attention backward (2 cores, load average 1): 15-16 s -> 9.0-9.4 s, the same
bits, a backward call in lanes mode 8-11 % longer (without the SLP vectoriser;
benchmarks/sim_attention_run.py; docs/sim-speed.md, "Build time"). That kernel no longer
takes these steps: a kernel of this size whose long element loops stay loops
(msltrans/sim/unroll.py, the same size rule) builds in a few seconds in one step. What takes
them now is a function of that size without such loops.

Every step keeps the IEEE semantics (no fast-math, contraction only where written): the
same values, bit for bit. A module without a lanes function (the pass left the kernel on
fibers) is code-generated in one step at -O2: its per-thread code is what runs. Smaller
kernels keep clang's one optimise-and-generate step (see SPLIT_MIN_INSTRUCTIONS), and so do
compilers without `llvm-extract` beside them (the ziglang package).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from msltrans.sim.compiler import Compiler

# Instructions in one function of the front end's IR (before any optimisation) from which a
# kernel is compiled this way. The attention kernels of the test suite have 4,800-24,800:
# the two from 20,000 up (the causal backward kernels, HEAD_DIM 32 and 64) took 7-16 s to
# build in one step. Those of 11,600-15,500 (two measured: 5.4-6.3 s) gained little from
# the split steps (their code generation is shorter) and keep the one step, whose
# per-thread code runs at full speed on fibers.
SPLIT_MIN_INSTRUCTIONS = 20_000
# GVN's scalar and load PRE (partial redundancy elimination) off, full redundancies still
# removed, and no SLP vectoriser (the loop vectoriser stays): on the largest attention
# backward GVN took 3.8 s of CPU with PRE, 2.1 s without, and SLP 1.5-2.4 s. PRE changed
# nothing measurable at run time; without SLP a backward call of the two kernels in lanes
# mode takes 8-11 % longer (1.52 -> 1.64 ms, 2.53 -> 2.82 ms), for ~2 s less build.
OPT_FLAGS = ("-mllvm", "-enable-load-pre=false", "-mllvm", "-enable-pre=false",
             "-fno-slp-vectorize")
# Code generation's level for the per-thread code of a kernel that has a lanes entry: -O0's
# (fast instruction selection and register allocation) took 1.3 s of CPU on the attention
# backward's where -O2's took 4.7 s (-O1's and -O2 with fast instruction selection 4.4-4.6 s);
# on fibers a backward call of the two kernels then took 2.0-2.1x as long (3.98 -> 7.93 ms,
# 7.11 -> 15.11 ms).
REST_CODEGEN = "-O0"
LANES_FUNCTIONS = r"^__msl_sim_lanes_[0-9]+$"

_DEFINE = re.compile(r"^define ", re.M)
_END = re.compile(r"^}", re.M)


def largest_function(ir: str) -> int:
    """Instructions of the largest function defined in `ir` (LLVM IR text): the indented
    lines between its `define` and its closing brace."""
    best, pos = 0, 0
    while True:
        start = _DEFINE.search(ir, pos)
        if start is None:
            return best
        end = _END.search(ir, start.end())
        stop = end.start() if end else len(ir)
        best = max(best, ir.count("\n  ", start.end(), stop))
        pos = stop


def wants_split(size: int) -> bool:
    """Whether a kernel whose front-end IR's largest function has `size` instructions
    (largest_function) is compiled in the split steps."""
    return size >= SPLIT_MIN_INSTRUCTIONS


def extract_tool(compiler: Compiler) -> str | None:
    """The `llvm-extract` of the LLVM install the clang driver belongs to, if there is one."""
    return compiler.llvm_tool("llvm-extract")


def _with_level(flags: Sequence[str], level: str) -> list[str]:
    return [level if f.startswith("-O") else f for f in flags]


def compile_split(compiler: Compiler, optimise: list[str], codegen: list[str],
                  ir: str, output: str,
                  run: Callable[[list[str], str], str],
                  try_run: Callable[[list[str]], bool]) -> bool:
    """Compile `ir` (the front end's IR, in the working directory) into the shared library
    `output` in the split steps; False where this compiler has no `llvm-extract` (then the
    caller compiles in one step). `optimise`: clang's flags for the optimisation step (the
    lanes pass, -ftime-report); `codegen`: code generation's flags; `run(argv, what)` runs
    a step and raises on failure, its stderr returned; `try_run(argv)` whether a step
    succeeded."""
    extract = extract_tool(compiler)
    if extract is None:
        return False
    clang = list(compiler.argv)
    run([*clang, "-x", "ir", *optimise, *OPT_FLAGS, "-emit-llvm", "-c", "-o", "kernel.opt.bc",
         ir], "optimising")
    no_opt = ["-Xclang", "-disable-llvm-passes", "-c"]
    if not try_run([extract, f"--rfunc={LANES_FUNCTIONS}", "-o", "lanes.bc",
                    "kernel.opt.bc"]):
        # No lanes function: the per-thread code is what runs, at -O2.
        run([*clang, "-x", "ir", *codegen, *no_opt, "-o", "kernel.o", "kernel.opt.bc"],
            "code generation")
        objects = ["kernel.o"]
    else:
        run([extract, "--delete", f"--rfunc={LANES_FUNCTIONS}", "-o", "rest.bc",
             "kernel.opt.bc"], "splitting")
        jobs = [([*clang, "-x", "ir", *codegen, *no_opt, "-o", "lanes.o", "lanes.bc"],
                 "code generation (lanes)"),
                ([*clang, "-x", "ir", *_with_level(codegen, REST_CODEGEN), *no_opt,
                  "-o", "rest.o", "rest.bc"], "code generation (per-thread)")]
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            for done in [pool.submit(run, argv, what) for argv, what in jobs]:
                done.result()
        objects = ["lanes.o", "rest.o"]
    run(compiler.link_command(output, objects), "linking")
    return True
