"""The compile driver: a kernel and its specialisation in, every stage's text and the
`MslProgram` out, through the Triton plugin's own stages (`MetalBackend.add_stages`:
ttir -> ttgir -> msl), so what comes out is exactly what `kernel[grid](...)` compiles.

    from msltrans import toolchain
    out = toolchain.compile_kernel(add_kernel, {"x_ptr": "*fp32", "n": "i32"},
                                   {"BLOCK": 1024}, num_warps=4)
    out.msl, out.ttgir, out.program.shared_bytes, out.metadata["params"]

The kernel is a `JITFunction`, the Python source of one (a string), a `.py` file (`kernel=`
picks one of several) or a saved `.ttgir` module. `msltrans dump`, the teaching views, the
benchmarks and tests compile through here; `to_ttgir` returns the live TTGIR module.
`load_kernel` and `first_launch` are the CLI's ways to get the kernel from a file; errors in
the user's file are `KernelFileError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msltrans.abi.limits import SIMD_WIDTH
from msltrans.errors import MetalNonRecoverableError
from msltrans.ir.pipeline import DEFAULT_CHIP
from msltrans.runtime.align_variants import state_divisibility

STAGES = ("ttir", "ttgir", "msl")


class KernelFileError(ValueError):
    """The user's file cannot give a kernel: not importable, no such kernel, or its run
    failed. The message is one line for the CLI to print."""


@dataclass
class Compiled:
    """What one compile produced; a stage that did not run is None."""

    kernel: str
    options: Any  # MetalOptions
    ttir: str | None = None
    ttgir: str | None = None
    msl: str | None = None
    program: Any = None  # MslProgram of the msl stage
    module: Any = None  # the live module the last stage run returned (TTIR/TTGIR)
    metadata: dict[str, Any] = field(default_factory=dict)  # the launch metadata
    seconds: dict[str, float] = field(default_factory=dict)  # per stage; "front end" too
    failed_stage: str | None = None  # with `partial=True`: where it stopped
    error: BaseException | None = None


def backend(chip: str = DEFAULT_CHIP) -> Any:
    from triton.backends.compiler import GPUTarget

    from msltrans.backend.compiler import MetalBackend

    return MetalBackend(GPUTarget("metal", chip, SIMD_WIDTH))


def specialisation_attrs(arg_names: list[str], divisible_by_16: Iterable[str] = (),
                         within_2gb: Iterable[str] = (),
                         divisibility: dict[str, int] | None = None
                         ) -> dict[tuple[int, ...], list[list[Any]]]:
    """ASTSource's `attrs`: what Triton's launcher would specialise (`tt.divisibility = 16`
    for 16-byte-aligned pointers and multiples of 16; `tt.pointer_range = 32` for pointers
    into buffers under 2 GB, as msltrans's launcher adds); `divisibility` states other
    divisibilities by name, replacing a 16 (what a launch-time alignment variant states:
    msltrans/runtime/align_variants.py)."""
    attrs: dict[tuple[int, ...], list[list[Any]]] = {}
    for a in divisible_by_16:
        attrs.setdefault((arg_names.index(a),), []).append(["tt.divisibility", 16])
    for a in within_2gb:
        attrs.setdefault((arg_names.index(a),), []).append(["tt.pointer_range", 32])
    for a, d in (divisibility or {}).items():
        state_divisibility(attrs, arg_names.index(a), d)
    return attrs


def compile_kernel(source: Any, signature: dict[str, str] | None = None,
                   constexprs: dict[str, Any] | None = None, *, num_warps: int | None = None,
                   kernel: str | None = None, options: dict[str, Any] | None = None,
                   attrs: dict[tuple[int, ...], list[list[Any]]] | None = None,
                   divisible_by_16: Iterable[str] = (), within_2gb: Iterable[str] = (),
                   divisibility: dict[str, int] | None = None, chip: str = DEFAULT_CHIP,
                   until: str = "msl", partial: bool = False, texts: bool = True) -> Compiled:
    """Compile `source` through the stages up to `until` (see the module docstring).

    `signature` maps each runtime argument to a Triton type ("*fp32", "i32", ...);
    `constexprs` gives constexpr values by name (they need no signature entry). `options`
    are Triton compile options (`enable_fp_fusion`, `msl_version`, ...) parsed by the
    plugin into `MetalOptions`, as a launch's keywords are. A `.ttgir` source takes none
    of the specialisation arguments. With `partial=True` a refusal (MetalNonRecoverableError)
    or a front-end error stops the compile and is returned in `error` / `failed_stage`, with
    the stages that did run filled in; otherwise it is raised. `texts=False` leaves the
    ttir/ttgir texts out (printing a large module takes time) and keeps the live module.
    """
    from triton import knobs
    from triton._C.libtriton import ir
    from triton.compiler.compiler import ASTSource, IRSource
    from triton.compiler.errors import CompilationError

    be = backend(chip)
    context = ir.context()
    ir.load_dialects(context)
    opts = dict(options or {})
    if isinstance(source, Path) and source.suffix == ".ttgir":
        src: Any = IRSource(str(source), context, be)
        parsed = dict(src.parse_options())
        if num_warps is not None and num_warps != parsed.get("num_warps"):
            raise KernelFileError(f"{source} was built for num_warps={parsed.get('num_warps')}; "
                                  "drop --num-warps")
        opts = {**parsed, **opts}
        name = src.name.lstrip("@")
    else:
        fn = source if not isinstance(source, (str, Path)) else (
            load_kernel(source, kernel) if isinstance(source, Path)
            else _jit_from_source(source, kernel))
        sig = dict(signature or {})
        constexprs = dict(constexprs or {})
        for cname in constexprs:
            sig.setdefault(cname, "constexpr")
        names = list(fn.arg_names)
        given = dict(attrs or {})
        for key, more in specialisation_attrs(names, divisible_by_16, within_2gb,
                                                  divisibility).items():
            given.setdefault(key, []).extend(more)
        src = ASTSource(fn, sig, constexprs, given)
        opts.setdefault("num_warps", num_warps or 4)
        name = fn.__name__
    # Explicit, so Triton does not warn about its fp-fusion default on every compile.
    opts.setdefault("enable_fp_fusion", knobs.language.default_fp_fusion)
    parsed_options = be.parse_options(opts)
    out = Compiled(name, parsed_options)
    stages: dict[str, Any] = {}
    be.add_stages(stages, parsed_options, src.language)
    order = list(stages)
    t0 = time.perf_counter()
    try:
        if isinstance(src, IRSource):
            module = src.make_ir(be.target, parsed_options, None, None, context)
            out.ttgir = str(module) if texts else None
            todo = order[order.index("ttgir") + 1:order.index(until) + 1]
        else:
            module = src.make_ir(be.target, parsed_options,
                                 be.get_codegen_implementation(parsed_options),
                                 be.get_module_map(), context)
            todo = order[:order.index(until) + 1]
    except CompilationError as exc:
        if not partial:
            raise
        out.failed_stage, out.error = "front end", exc
        return out
    out.seconds["front end"] = time.perf_counter() - t0
    for stage in todo:
        t0 = time.perf_counter()
        try:
            if stage == "msl":
                module = _msl_stage(module, out, parsed_options)
            else:
                module = stages[stage](module, out.metadata)
                if texts:
                    setattr(out, stage, str(module))
        except MetalNonRecoverableError as exc:
            if not partial:
                raise
            out.failed_stage, out.error = stage, exc
            return out
        out.seconds[stage] = time.perf_counter() - t0
    out.module = module
    return out


def to_ttgir(fn_or_src: Any, signature: dict[str, str], constexprs: dict[str, Any] | None = None,
             num_warps: int = 4, *, kernel_name: str | None = None,
             arch: str = DEFAULT_CHIP, divisible_by_16: tuple[str, ...] = (),
             within_2gb: tuple[str, ...] = (), divisibility: dict[str, int] | None = None
             ) -> Any:
    """Run Triton's front end and the Metal pass pipeline; returns the live TTGIR module,
    for code that walks or lowers the module itself (tests, the codegen statistics). One
    difference from a launch: Triton's `sanitize_overflow` is off.

    `fn_or_src` is a JITFunction or the Python source of one (`kernel_name` picks one of
    several). `signature` maps every argument name to a Triton type string ("*fp32", "i32",
    ...) or "constexpr"; `constexprs` gives the constexpr values by name; `divisible_by_16`
    names the arguments the JIT would specialise as multiples of 16
    (`tt.divisibility = 16`); `within_2gb` the pointer arguments whose buffers it would see
    under 2 GB (`tt.pointer_range = 32`); `divisibility` other stated divisibilities by
    name (specialisation_attrs).
    """
    out = compile_kernel(
        fn_or_src, signature, constexprs, num_warps=num_warps, kernel=kernel_name, chip=arch,
        divisible_by_16=divisible_by_16, within_2gb=within_2gb, divisibility=divisibility,
        until="ttgir", texts=False,
        options={"sanitize_overflow": False})
    return out.module


def lower_with_dot_path(fn: Any, signature: dict[str, str], num_warps: int = 4,
                        path: str = "auto", **constexprs: Any) -> Any:
    """The MslProgram of `fn` with every tt.dot lowered by one path ("auto": the normal
    choice; lower/dot/choose.py force_path), for the dot tests and the codegen statistics."""
    from msltrans.ir import read_module
    from msltrans.lower import lower_module
    from msltrans.lower.dot.choose import force_path

    with force_path(path):
        return lower_module(read_module(to_ttgir(fn, signature, constexprs, num_warps)))


def run_on_simulator(program: Any, grid: tuple[int, ...], args: tuple) -> None:
    """Run an MslProgram on the simulator per the dispatch contract (grid (gx, gy, gz) ->
    threads (gx*T, gy, gz), groups of T); numpy arrays are read and written in place."""
    from msltrans import sim

    gx, gy, gz = (tuple(grid) + (1, 1, 1))[:3]
    t = program.threads_per_group
    kernel = getattr(sim.compile_shader(program.source), program.kernel_name)
    kernel(*program.engine_args(args), threads=(gx * t, gy, gz), group_size=(t, 1, 1),
           arg_casts=program.arg_casts, buffer_alignment=program.sim_alignment)


def _msl_stage(module: Any, out: Compiled, options: Any) -> str:
    """The plugin's msl stage (backend/compiler.make_msl), keeping the MslProgram."""
    from msltrans.backend.compiler import lower_ttgir, record_metadata

    out.program = lower_ttgir(module, options)
    record_metadata(out.program, out.metadata, options)
    out.msl = out.program.source
    return out.msl


def front_end_error(exc: Any, fn: Any) -> tuple[int | None, str]:
    """Triton's CompilationError -> (line in the kernel's file, the reason's last line).
    Triton numbers lines from the `def` (decorators stripped); the file from the first
    decorator."""
    node_line = getattr(exc.node, "lineno", None)
    start = getattr(fn, "starting_line_number", None)
    raw = list(getattr(fn, "raw_src", []) or [])
    skip = next((i for i, t in enumerate(raw) if t.lstrip().startswith("def ")), 0)
    line = start + skip + node_line - 1 if node_line and start else None
    cause = exc.__cause__
    detail = exc.error_message or (str(cause) if cause else type(exc).__name__)
    return line, detail.strip().splitlines()[-1]


def launch_comment(metadata: dict[str, Any]) -> str:
    """The launch metadata as MSL comments (what `msltrans dump` appends to the MSL)."""
    lines = [f"// launch: kernel {metadata.get('name')}, {metadata.get('threads_per_group')} "
             f"threads per threadgroup, {metadata.get('shared')} bytes threadgroup memory"]
    for p in metadata.get("params", []):
        if p["kind"] == "pointer" and p.get("slot") is not None:
            lines.append(f"//   buffer({p['buffer_index']}) address {p['slot']}: {p['name']} "
                         f"{p['triton_type']} (in the argument buffer of GPU addresses)")
        elif p["kind"] == "pointer":
            lines.append(f"//   buffer({p['buffer_index']}): {p['name']} {p['triton_type']}")
        else:
            lines.append(f"//   buffer({p['buffer_index']}) byte {p['offset']}: {p['name']} "
                         f"{p['triton_type']} (scalar, in the argument struct)")
    return "\n".join(lines)


# ---- kernels from files ----------------------------------------------------------------------

def _jit_functions(module: Any) -> dict[str, Any]:
    from triton.runtime.jit import JITFunction

    return {k: v for k, v in vars(module).items() if isinstance(v, JITFunction)}


def _pick(kernels: dict[str, Any], name: str | None, where: str) -> Any:
    if name is not None:
        if name not in kernels:
            have = ", ".join(sorted(kernels)) or "none"
            raise KernelFileError(f"{where} has no @triton.jit kernel {name!r}; it has: {have}")
        return kernels[name]
    if len(kernels) != 1:
        listed = ", ".join(sorted(kernels)) or "none"
        raise KernelFileError(f"{where} defines {len(kernels)} @triton.jit kernels ({listed}): "
                              "pass --kernel NAME")
    return next(iter(kernels.values()))


def load_kernel(path: Path, name: str | None = None) -> Any:
    """Import `path` (not as __main__) and return its @triton.jit kernel `name` (or its only
    one)."""
    spec = importlib.util.spec_from_file_location(f"msltrans_cli_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise KernelFileError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: report, don't trace back
        raise KernelFileError(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    return _pick(_jit_functions(module), name, str(path))


def _jit_from_source(src: str, name: str | None) -> Any:
    """Import kernel source from a real file: Triton's JIT needs inspectable source."""
    digest = hashlib.sha1(src.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"msltrans_src_{digest}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"msltrans_src_{digest}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    kernels = _jit_functions(module)
    if name is not None:
        return kernels[name]
    if len(kernels) != 1:
        raise ValueError(f"source defines {sorted(kernels)}; pass the kernel name")
    return next(iter(kernels.values()))


def runs_as_script(path: Path) -> bool:
    return "__main__" in path.read_text(errors="replace")


def run_script(path: Path, argv: list[str] | None = None,
               on_exit: Callable[[int | str | None], None] | None = None) -> dict[str, Any]:
    """Run `path` as `python path argv...` in this process, its stdout sent to stderr, and
    return its globals. A non-zero exit raises KernelFileError unless `on_exit` takes it."""
    # A module we keep, not runpy's: a script that ends in `sys.exit(main())` still leaves
    # its launched kernels in the returned scope.
    module = types.ModuleType("__main__")
    module.__file__ = str(path)
    scope = module.__dict__
    saved = sys.argv, sys.path[:], sys.modules.get("__main__")
    sys.argv = [str(path), *(argv or [])]
    sys.path.insert(0, str(path.resolve().parent))
    sys.modules["__main__"] = module
    try:
        code = compile(path.read_text(encoding="utf-8"), str(path), "exec")
        with contextlib.redirect_stdout(sys.stderr):
            exec(code, scope)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            if on_exit is None:
                raise KernelFileError(f"{path} exited with status {exc.code}") from None
            on_exit(exc.code)
    finally:
        sys.argv, sys.path[:] = saved[0], saved[1]
        if saved[2] is not None:
            sys.modules["__main__"] = saved[2]
    return scope


def first_launch(path: Path, fn: Any) -> Any | None:
    """Run the script as `python path` and return what its first launch of `fn` compiled
    (Triton's compiled kernel: `asm`, `metadata`, `src`), None when it never launched `fn`.
    The program's own output goes to stderr; a failing program is a KernelFileError."""
    def failed(code: int | str | None) -> None:
        raise KernelFileError(f"running {path} to capture its launches failed (exit status "
                              f"{code})")

    try:
        scope = run_script(path, on_exit=failed)
    except KernelFileError:
        raise
    except Exception as exc:  # the user's program: report, don't trace back
        raise KernelFileError(f"running {path} to capture its launches failed: "
                              f"{type(exc).__name__}: {exc}") from exc
    ran = scope.get(fn.__name__, fn)
    compiled = [k for cache in getattr(ran, "device_caches", {}).values()
                for k in cache[0].values()]
    return compiled[0] if compiled else None


def stage_text(kernel: Any, stage: str) -> str:
    """One stage's text of a kernel Triton compiled (`kernel.asm`)."""
    text = kernel.asm[stage]
    return text.decode() if isinstance(text, bytes) else str(text)


def launch_signature(kernel: Any) -> str:
    src = getattr(kernel, "src", None)
    if src is None:
        return "as launched"
    return ", ".join(f"{k}={v}" for k, v in src.signature.items())
