"""Compiling very large kernels: the same -O2 code, minutes faster.

A kernel body with thousands of element loops (a 1024-wide bitonic sort is ~4,000) makes
LLVM's -O2 pipeline quadratic: LoopRotate (and the passes after it) update a dominator tree
as deep as the chain of loops once per loop — 62% of clang's 10 s on a 512-wide top-k.
Those loops all have constant trip counts, and -O2 unrolls them fully anyway, later. So a
large kernel is compiled in three steps: clang's front end to bitcode, `opt` with the loops
fully unrolled first (`mem2reg, loop-unroll-full`) and then the usual `default<O2>`, and
clang's code generator at -O2. Same flags, same IEEE semantics (no fast-math, contraction
off: only explicit fma() fuses); only the order of the optimisations differs. Small kernels
keep the one-step compile (two more processes cost more than they save there), and so do
compilers without an `opt` next to them (the ziglang package).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from pathlib import Path

from msltrans.sim.compiler import Compiler

# Element loops in the source from which the three-step compile pays off (the tutorial
# kernels have 50-250; a 512-wide top-k 2,000).
LARGE_KERNEL_LOOPS = 600
PIPELINE = "function(mem2reg,loop(loop-unroll-full)),default<O2>"
_LOOP = re.compile(r"\bfor\s*\(")


def is_large(source: str) -> bool:
    return len(_LOOP.findall(source)) >= LARGE_KERNEL_LOOPS


@functools.lru_cache(maxsize=4)
def opt_tool(compiler: Compiler) -> str | None:
    """The `opt` of the LLVM install the clang driver belongs to, if there is one."""
    if len(compiler.argv) != 1:
        return None
    real = Path(os.path.realpath(compiler.argv[0]))
    for name in ("opt", f"opt-{compiler.major}"):
        candidate = real.with_name(name)
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def compile_large(compiler: Compiler, front: list[str], codegen: list[str], link: list[str],
                  prepared: str, output: str, run: Callable[[list[str], str], object]) -> bool:
    """Compile `prepared` (in the working directory) into `output` in three steps; False
    when this compiler has no `opt` (then the caller compiles in one step). `front`: the
    language, include and PCH flags; `codegen`: the one-step compile's code generation
    flags; `run(argv, what)` runs a step and raises on failure."""
    opt = opt_tool(compiler)
    if opt is None:
        return False
    objects = [f for f in codegen if f not in ("-shared", "-nostdlib")]
    run([*compiler.argv, *front, *objects, "-Xclang", "-disable-llvm-passes", "-emit-llvm",
         "-c", "-o", "kernel.bc", prepared], "compiling")
    run([opt, f"-passes={PIPELINE}", "kernel.bc", "-o", "kernel.opt.bc"], "optimising")
    run([*compiler.argv, *codegen, "-Xclang", "-disable-llvm-passes", "-o", output,
         "kernel.opt.bc", "-x", "none", *link], "code generation")
    return True
