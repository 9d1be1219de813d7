"""MSL source -> kernel shared library: mark, preprocess, rewrite, add entries, compile."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from msltrans import settings
from msltrans.sim import fp_pragmas
from msltrans.sim.attributes import check_source
from msltrans.sim.cache import atomic_write, cache_dir, temp_output
from msltrans.sim.coherence import DEFINE as COHERENCE_DEFINE
from msltrans.sim.compiler import (
    CODEGEN_FLAGS,
    Compiler,
    alignment_flags,
    include_flags,
    language_flags,
    shell_command,
)
from msltrans.sim.discover import find_kernels
from msltrans.sim.entries import generate_entries
from msltrans.sim.errors import CompileError
from msltrans.sim.lanes.plugin import lanes_flags
from msltrans.sim.language import (
    check_ir,
    check_user_text,
    keep_threadgroup_alignment_checks,
)
from msltrans.sim.large import compile_large, is_large
from msltrans.sim.nan_canon import canonicalize_nans
from msltrans.sim.pch import PCH_CODEGEN, USE_PCH, prelude_pch, split_shim
from msltrans.sim.phases import TIME_REPORT, split_report
from msltrans.sim.prepare import (
    KERNEL_MARK,
    TG_ATTR_MARK,
    mark_source,
    rewrite_threadgroup_decls,
    split_preprocessed,
)
from msltrans.sim.split import compile_split, largest_function, wants_split
from msltrans.sim.store import Built, file_hash
from msltrans.sim.unroll import cap_preprocessed, cap_unrolls, wants_loops

# Unoptimised LLVM IR (the optimiser runs once, after the NaN rewrite).
IR_FLAGS = ("-S", "-emit-llvm", "-Xclang", "-disable-llvm-passes")
# Before the user's source: the ABI (so entries and rewrites can name it even if the
# shim never includes it) and the entry helpers.
PRELUDE_FLAGS = ("-include", "msl_sim/entry.h")
# The profiling build (msltrans.sim.profile): clang's address sanitizer reduced to one call
# per load and store (__asan_loadN/__asan_storeN, which the runtime's profile.c defines),
# with none of its shadow memory, stack, globals or redundant-check elimination; no
# auto-vectorisation, so the accesses counted are the widths the MSL wrote.
PROFILE_FLAGS = (
    "-fsanitize=address", "-fno-sanitize-link-runtime", "-fsanitize-address-use-after-return=never",
    "-fno-sanitize-address-use-after-scope",
    "-mllvm", "-asan-instrumentation-with-call-threshold=0", "-mllvm", "-asan-stack=0",
    "-mllvm", "-asan-globals=0", "-mllvm", "-asan-instrument-dynamic-allocas=0",
    "-mllvm", "-asan-guard-against-version-mismatch=0", "-mllvm", "-asan-constructor-kind=none",
    "-mllvm", "-asan-opt=0", "-fno-vectorize", "-fno-slp-vectorize",
)


def _safe_name(name: str) -> str:
    base = os.path.basename(name) or "shader.metal"
    return re.sub(r"[^\w.\-]", "_", base)


# Clang's wording for MSL mistakes, and what they mean in Metal terms.
_HINTS = {
    "requires cl_khr_fp64": "Metal has no `double`: use float (or a float2 pair)",
    "non-kernel function variable cannot be declared in local address space":
        "a `threadgroup` declaration the simulator could not rewrite (keep it a plain "
        "`threadgroup T name[N];` statement)",
}


def _hints(diagnostics: str) -> str:
    found = [hint for needle, hint in _HINTS.items() if needle in diagnostics]
    return "".join(f"hint: {hint}\n" for hint in found)


def _run(argv: list[str], cwd: str, what: str, name: str, keep: Path | None,
         err: list[str] | None = None) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
    if err is not None:
        err.append(result.stderr)
    if result.returncode != 0:
        command = shell_command(argv)
        if keep is not None:
            # Keep what failed so the printed command can be rerun.
            shutil.copytree(cwd, keep, dirs_exist_ok=True)
            command = f"cd {shell_command([str(keep)])} && {command}"
        diagnostics = result.stderr.replace(cwd + "/", "")
        raise CompileError(f"{what} of `{name}` failed", _hints(diagnostics) + diagnostics,
                           command)
    return result.stdout


def build(source: str, name: str, compiler: Compiler, key: str,
          include_dirs: tuple[str, ...] = (), version: int = 320,
          profile: bool = False, checked: bool = False) -> Built:
    """Compile `source` as MSL `version` into cache_dir()/<key>.so and write its kernel
    metadata (`profile`: the instrumented build msltrans.sim.profile runs; `checked`: the
    same instrumentation for the coherence check, msltrans/sim/coherence.py)."""
    flags = language_flags(version)
    if checked:
        flags = (*flags, COHERENCE_DEFINE)
    instrumented = profile or checked
    name = _safe_name(name)
    out_dir = cache_dir()
    library = out_dir / f"{key}.so"
    keep = out_dir / f"failed-{key[:16]}"
    includes = [f for inc in include_dirs for f in ("-I", inc)] + include_flags()
    shim_dir = include_flags()[1]
    phases: dict[str, float] = {}   # seconds per step (msltrans/sim/phases.py)
    clock = time.perf_counter()
    lock = threading.Lock()

    def lap(what: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        phases[what] = phases.get(what, 0.0) + now - clock
        clock = now

    with tempfile.TemporaryDirectory(prefix="mslsim-") as work:
        Path(work, name).write_text(mark_source(cap_unrolls(source)))
        argv = [*compiler.argv, "-E", *flags, *PCH_CODEGEN, *includes,
                *PRELUDE_FLAGS, name]
        preprocessed = _run(argv, work, "preprocessing", name, keep)
        lap("preprocess")
        pre = split_preprocessed(preprocessed, shim_dir)
        # The user's files, for the IR checks. Headers are not held to ASCII: torch converts
        # only the source string (docs/simulator.md, "What the simulator refuses").
        sources = {name: source}
        for header in sorted(pre.files):
            if (header != name and not header.startswith(("<", shim_dir))
                    and os.path.isfile(header)):
                sources[header] = Path(header).read_text(errors="surrogateescape")
        check_source(pre.text, pre.in_user_code, name, frozenset({KERNEL_MARK, TG_ATTR_MARK}))
        fp_pragmas.check(pre.text, pre.in_user_code, name, version)
        check_user_text(pre.text, pre.in_user_code, name, version)
        # Kernel discovery first: it only blanks (lengths stay), so user ranges stay valid
        # for the threadgroup rewrite, which changes lengths.
        kernels, pre.text = find_kernels(pre)
        text, _ = rewrite_threadgroup_decls(pre)
        if not kernels:
            raise CompileError(f"`{name}` defines no kernel (`kernel void f(...)`)")
        # Diagnostics quote source lines from disk: put the user's own text back.
        Path(work, name).write_text(source)
        pch_flags: list[str] = []
        no_pch = instrumented or settings.is_set(settings.SIM_NO_PCH)
        prelude = None if no_pch else prelude_pch(compiler, version)
        if prelude is not None:
            shim_text, rest = split_shim(text, shim_dir)
            if shim_text == prelude[1]:
                text, pch_flags = rest, [*USE_PCH, str(prelude[0])]
        prepared, prepared_text = f"{name}.ii", text + "\n" + generate_entries(kernels)
        Path(work, prepared).write_text(prepared_text)
        # To LLVM IR before any optimisation, NaNs made Apple's (nan_canon.py), then optimised
        # and compiled as one.
        # The profiling build's sanitizer flags go to both steps: the front end marks the
        # functions to instrument, the optimiser instruments them.
        profiling = PROFILE_FLAGS if instrumented else ()
        argv = [*compiler.argv, *flags, *CODEGEN_FLAGS, *alignment_flags(), *profiling,
                *includes, *pch_flags, *IR_FLAGS, "-o", f"{name}.ll", prepared]
        lap("preprocess")   # the source checks and rewrites above
        _run(argv, work, "compiling", name, keep)
        ir = Path(work, f"{name}.ll")
        ir_text = ir.read_text()
        size, loops = largest_function(ir_text), "unrolled"
        large = not instrumented and is_large(source)
        if not instrumented and not large and wants_loops(size):
            # A very large function: its long element loops stay loops (unroll.py; the
            # three-step compile of large.py unrolls its kernels' loops first, and fast).
            capped = cap_preprocessed(prepared_text)
            if capped != prepared_text:
                Path(work, prepared).write_text(capped)
                _run(argv, work, "compiling", name, keep)
                ir_text = ir.read_text()
                loops = "kept"
        lap("front_end")
        check_ir(ir_text, sources, sources)
        ir.write_text(canonicalize_nans(keep_threadgroup_alignment_checks(ir_text)))
        lap("nan_rewrite")
        tmp = temp_output(library)
        # The lanes pass (msltrans.sim.lanes) adds each kernel's simdgroup-at-a-time entry.
        lanes = () if instrumented else lanes_flags(compiler)
        try:
            def step(args: list[str], what: str) -> str:
                out = _run(args, work, what, name, keep)
                lap("opt" if what == "optimising" else "codegen")
                return out

            def split_step(args: list[str], what: str) -> str:
                report: list[str] = []
                _run(args, work, what, name, keep, report)
                with lock:   # the two code generation steps run at once
                    if what == "optimising":
                        seconds = time.perf_counter() - clock
                        for phase, value in split_report(report[0], seconds).items():
                            phases[phase] = phases.get(phase, 0.0) + value
                        lap("ignored")
                    else:
                        lap("link" if what == "linking" else "codegen")
                return report[0]

            def split_try(args: list[str]) -> bool:
                return subprocess.run(args, capture_output=True, cwd=work).returncode == 0

            codegen = [f for f in CODEGEN_FLAGS if f not in ("-shared", "-nostdlib")]
            if (not instrumented and not large and loops != "kept" and wants_split(size)
                    and compile_split(compiler,
                                      [*codegen, *lanes, "-ffp-contract=off", *TIME_REPORT],
                                      [*codegen, "-ffp-contract=off"], f"{name}.ll", str(tmp),
                                      split_step, split_try)):
                phases.pop("ignored", None)
                pipeline = "split"
            elif large and compile_large(
                    compiler, [*CODEGEN_FLAGS, "-ffp-contract=off"], list(compiler.link_flags),
                    f"{name}.ll", str(tmp), step):
                pipeline = "three-step"
            else:
                pipeline = "one-step"
                report: list[str] = []
                # The object, then the driver's own linker command run directly
                # (Compiler.linker: the same library ~25 ms sooner than the driver links it).
                obj = f"{name}.o"
                _run([*compiler.argv, "-x", "ir", *codegen, *profiling, *lanes,
                      "-ffp-contract=off", *TIME_REPORT, "-c", "-o", obj, f"{name}.ll"],
                     work, "compiling (LLVM IR)", name, keep, report)
                _run(compiler.link_command(str(tmp), [obj]), work, "linking", name, keep)
                phases.update(split_report(report[0], time.perf_counter() - clock))
                clock = time.perf_counter()
            os.replace(tmp, library)
        finally:
            tmp.unlink(missing_ok=True)
    deps = {f: file_hash(f) for f in sorted(pre.files)
            if not f.startswith(("<", shim_dir)) and f != name and os.path.isfile(f)}
    phases["total"] = sum(phases.values())
    meta = {"name": name, "kernels": [k.to_json() for k in kernels], "deps": deps,
            "phases": {k: round(v, 4) for k, v in phases.items()}, "pipeline": pipeline,
            "element_loops": loops}
    atomic_write(out_dir / f"{key}.json", json.dumps(meta).encode())
    return Built(library, kernels, deps)
