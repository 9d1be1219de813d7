"""Compiling very large kernels: the same -O2 code, minutes faster.

A kernel body with thousands of element loops (a 1024-wide bitonic sort is ~4,000) makes
LLVM's -O2 pipeline quadratic: LoopRotate (and the passes after it) update a dominator tree
as deep as the chain of loops once per loop — 62% of clang's 10 s on a 512-wide top-k.
Those loops all have constant trip counts, and -O2 unrolls them fully anyway, later. So a
large kernel is compiled in three steps: clang's front end to unoptimised IR (the step every
kernel takes, msltrans.sim.build: NaNs are made Apple's there), `opt` with the loops fully
unrolled first (`mem2reg, loop-unroll-full`) and then the usual `default<O2>`, and
clang's code generator at -O2. Same flags, same IEEE semantics (no fast-math, contraction
off: only explicit fma() fuses); only the order of the optimisations differs. Small kernels
keep clang's one optimise-and-generate step (one more process costs more than it saves
there), and so do compilers without an `opt` next to them (the ziglang package).

`opt` is given the module as bitcode (`llvm-as` first, 0.7 s on the 1024-wide top-k's 7.8 MB
of IR): read from the text, the same pipeline took 6.6-10.2 s on that kernel, from bitcode
4.2-6.8 s, with identical output (most of the difference is in the full unroller, whose
time goes to dominator-tree updates either way; what makes it slower on a module parsed from
text was not found: the use-list orders are the same).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from msltrans.sim.compiler import Compiler

# Element loops in the source from which the three-step compile pays off (the tutorial
# kernels have 50-250; a 512-wide top-k 2,000).
LARGE_KERNEL_LOOPS = 600
PIPELINE = "function(mem2reg,loop(loop-unroll-full)),default<O2>"
_LOOP = re.compile(r"\bfor\s*\(")


def is_large(source: str) -> bool:
    return len(_LOOP.findall(source)) >= LARGE_KERNEL_LOOPS


def opt_tool(compiler: Compiler) -> str | None:
    """The `opt` of the LLVM install the clang driver belongs to, if there is one."""
    return compiler.llvm_tool("opt")


def compile_large(compiler: Compiler, codegen: list[str], link: list[str], ir: str,
                  output: str, run: Callable[[list[str], str], object]) -> bool:
    """Optimise and compile `ir` (unoptimised LLVM IR from clang's front end, in the working
    directory) into `output` in two steps; False when this compiler has no `opt` (then the
    caller compiles the IR in one step). `codegen`: the one-step compile's code generation
    flags; `run(argv, what)` runs a step and raises on failure."""
    opt = opt_tool(compiler)
    if opt is None:
        return False
    assembler = compiler.llvm_tool("llvm-as")
    if assembler is not None:
        # Read as bitcode, the same module optimises to the same bits in two thirds of the
        # time (see the module's text).
        run([assembler, ir, "-o", "kernel.bc"], "optimising")
        ir = "kernel.bc"
    run([opt, f"-passes={PIPELINE}", ir, "-o", "kernel.opt.bc"], "optimising")
    run([*compiler.argv, *codegen, "-Xclang", "-disable-llvm-passes", "-o", output,
         "kernel.opt.bc", "-x", "none", *link], "code generation")
    return True
