"""`msltrans` command line: show what a Triton kernel becomes on the way to Metal.

The dump runs the plugin's own stages (`MetalBackend.add_stages`: ttir → ttgir → msl), so
what it prints is exactly what `kernel[grid](...)` would compile. Errors are one line on
stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from pathlib import Path
from typing import Any, NoReturn

from msltrans import cli_signature
from msltrans.errors import MetalNonRecoverableError

STAGES = ("ttir", "ttgir", "msl")

EPILOG = """\
examples:
  msltrans dump examples/vector_add.py
      runs the script and prints the MSL of the kernel it launched (a vector add)
  msltrans dump examples/vector_add.py --signature n=i32 --constexpr BLOCK=1024
      the same without running it (a_ptr, b_ptr, out_ptr default to *fp32)
  msltrans dump kernels.py --kernel softmax --stage ttgir --num-warps 8 \\
      --signature n_rows=i32,n_cols=i32,in_stride=i32,out_stride=i32 --constexpr BLOCK=1024
      the TTGIR Triton produced for the Metal target, with its layouts
  msltrans dump kernel.ttgir --stage msl
      lower a saved TTGIR module (e.g. from TRITON_KERNEL_DUMP=1) without the front end
  msltrans info
      which engine (Apple GPU or CPU simulator) and target this machine gets

signature (kernel.py input):
  with no flags, a script (it has a __main__ block) is run and the kernel's first real launch
  is dumped (the script's own output goes to stderr). Otherwise, or when the script never
  launches the kernel, the signature is assumed as a typical launch has it and the
  assumptions are printed first: an argument whose name ends in _ptr, or that is the base of
  a tl.load/tl.store address, is *fp32 and 16-byte aligned (tt.divisibility=16, as Triton's
  launcher specialises torch tensors); any other argument is i32. --signature NAME=TYPE
  (i32, i64, u32, fp32, fp16, bf16, i1, *fp16, *i32, ...), --unaligned NAME and --divisible
  NAME override them. A constexpr takes --constexpr NAME=VALUE or its Python default; VALUE
  is a Python literal (1024, 0.5, True) or a dtype such as tl.float16.

MSLTRANS_TRACEBACK=1 shows the full Python traceback of an error.
the same output from a running program: TRITON_KERNEL_DUMP=1 TRITON_DUMP_DIR=dump python app.py
writes every stage, .msl included, under dump/<hash>/.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        _fail(f"{message} (see `{self.prog} --help`)")


def _fail(message: str) -> NoReturn:
    print(f"msltrans: error: {message}", file=sys.stderr)
    raise SystemExit(1)


def _split_pairs(items: list[str] | None, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        for pair in item.split(","):
            if not pair.strip():
                continue
            if "=" not in pair:
                _fail(f"{flag} expects NAME=VALUE, got {pair!r}")
            name, value = pair.split("=", 1)
            out[name.strip()] = value.strip()
    return out


def _parse_constexpr(text: str) -> Any:
    if text.startswith("tl."):
        import triton.language as tl

        value = getattr(tl, text[3:], None)
        if value is None:
            _fail(f"unknown Triton dtype {text!r} in --constexpr")
        return value
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # a bare word: pass it as a string constexpr


def _load_kernel(path: Path, name: str | None) -> Any:
    from triton.runtime.jit import JITFunction

    spec = importlib.util.spec_from_file_location(f"msltrans_cli_{path.stem}", path)
    if spec is None or spec.loader is None:
        _fail(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: report, don't trace back
        _fail(f"importing {path} failed: {type(exc).__name__}: {exc}")
    kernels = {k: v for k, v in vars(module).items() if isinstance(v, JITFunction)}
    if name is not None:
        if name not in kernels:
            have = ", ".join(sorted(kernels)) or "none"
            _fail(f"{path} has no @triton.jit kernel {name!r}; it has: {have}")
        return kernels[name]
    if len(kernels) != 1:
        listed = ", ".join(sorted(kernels)) or "none"
        _fail(f"{path} defines {len(kernels)} @triton.jit kernels ({listed}): pass --kernel NAME")
    return next(iter(kernels.values()))


def _launch_comment(metadata: dict[str, Any]) -> str:
    lines = [f"// launch: kernel {metadata.get('name')}, {metadata.get('threads_per_group')} "
             f"threads per threadgroup, {metadata.get('shared')} bytes threadgroup memory"]
    for p in metadata.get("params", []):
        if p["kind"] == "pointer":
            lines.append(f"//   buffer({p['buffer_index']}): {p['name']} {p['triton_type']}")
        else:
            lines.append(f"//   buffer({p['buffer_index']}) byte {p['offset']}: {p['name']} "
                         f"{p['triton_type']} (scalar, in the argument struct)")
    return "\n".join(lines)


def _emit(stage: str, text: str, show_header: bool) -> None:
    if show_header:
        print(f"// ===== {stage} =====")
    print(text.rstrip("\n"))


def _compile_and_print(args: argparse.Namespace) -> None:
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, IRSource

    from msltrans.backend.compiler import MetalBackend

    path = Path(args.file)
    if not path.is_file():
        _fail(f"no such file: {path}")
    wanted = STAGES if args.stage == "all" else (args.stage,)
    backend = MetalBackend(GPUTarget("metal", args.chip, 32))
    context = ir.context()
    ir.load_dialects(context)
    if path.suffix == ".ttgir":
        if "ttir" in wanted and args.stage != "all":
            _fail("a .ttgir input has no ttir stage; use --stage ttgir or --stage msl")
        src: Any = IRSource(str(path), context, backend)
        opts = dict(src.parse_options())
        if args.num_warps is not None and args.num_warps != opts.get("num_warps"):
            _fail(f"{path} was built for num_warps={opts.get('num_warps')}; drop --num-warps")
    else:
        fn = _load_kernel(path, args.kernel)
        flags = bool(args.signature or args.constexpr or args.unaligned or args.divisible
                     or args.over_2gb)
        if not flags and _runs_as_script(path) and _dump_from_run(path, fn, wanted):
            return  # the script's own first launch: its real signature and specialisations
        try:
            assumed = cli_signature.infer(
                fn, _split_pairs(args.signature, "--signature"),
                _split_pairs(args.constexpr, "--constexpr"), _names(args.unaligned),
                _names(args.divisible), _parse_constexpr, frozenset(_names(args.over_2gb)))
        except cli_signature.MissingSpecialization as missing:
            _fail(str(missing))
        src = ASTSource(fn, assumed.signature, assumed.constexprs,
                        assumed.attrs(list(fn.arg_names)))
        opts = {"num_warps": args.num_warps or 4}
        header = assumed.header()
        if header:
            print(header)
    # Explicit, so Triton does not warn about its fp-fusion default on every dump.
    from triton import knobs

    opts["enable_fp_fusion"] = knobs.language.default_fp_fusion and not args.no_fp_fusion
    options = backend.parse_options(opts)
    stages: dict[str, Any] = {}
    backend.add_stages(stages, options, src.language)
    names = list(stages)
    first = names.index(src.ext) + (1 if isinstance(src, IRSource) else 0)
    module = _make_ir(src, backend, options, context, path)
    if isinstance(src, IRSource) and "ttgir" in wanted:
        _emit("ttgir", str(module), len(wanted) > 1)
    metadata: dict[str, Any] = {}
    last = max(names.index(s) for s in wanted)
    for name in names[first:last + 1]:
        module = stages[name](module, metadata)
        if name in wanted:
            text = str(module)
            if name == "msl":
                text = text.rstrip("\n") + "\n" + _launch_comment(metadata)
            _emit(name, text, len(wanted) > 1)


def _names(items: list[str] | None) -> set[str]:
    return {n.strip() for item in items or [] for n in item.split(",") if n.strip()}


def _runs_as_script(path: Path) -> bool:
    return "__main__" in path.read_text(errors="replace")


def first_launch(path: Path, fn: Any) -> Any | None:
    """Run the script as `python path` and return what its first launch of `fn` compiled
    (Triton's compiled kernel: `asm`, `metadata`, `src`), None when it never launched `fn`.
    The program's own output goes to stderr; a failing program ends the CLI with its reason."""
    import contextlib
    import types

    # Run in a module we keep, not runpy's: a script that ends in `sys.exit(main())` still
    # leaves its launched kernels in `scope`.
    module = types.ModuleType("__main__")
    module.__file__ = str(path)
    scope = module.__dict__
    saved = sys.argv, sys.path[:], sys.modules.get("__main__")
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.resolve().parent))
    sys.modules["__main__"] = module
    try:
        code = compile(path.read_text(encoding="utf-8"), str(path), "exec")
        # The program's own output goes to stderr so that stdout is the dump alone.
        with contextlib.redirect_stdout(sys.stderr):
            exec(code, scope)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            _fail(f"running {path} to capture its launches failed (exit status {exc.code})")
    except Exception as exc:  # the user's program: report, don't trace back
        _fail(f"running {path} to capture its launches failed: {type(exc).__name__}: {exc}")
    finally:
        sys.argv, sys.path[:] = saved[0], saved[1]
        if saved[2] is not None:
            sys.modules["__main__"] = saved[2]
    ran = scope.get(fn.__name__, fn)
    compiled = [k for cache in getattr(ran, "device_caches", {}).values()
                for k in cache[0].values()]
    return compiled[0] if compiled else None


def _dump_from_run(path: Path, fn: Any, wanted: tuple[str, ...]) -> bool:
    """Run the script as `python path` and print what its first launch of `fn` compiled;
    False when it never launched `fn` (the caller then assumes a signature).

    The signature, constexprs and specialisations are then the ones the program really used,
    so `msltrans dump examples/vector_add.py` needs no flags.
    """
    kernel = first_launch(path, fn)
    if kernel is None:
        print(f"msltrans: {path} ran but never launched `{fn.__name__}`: assuming its "
              "signature", file=sys.stderr)
        return False
    sig = ", ".join(f"{k}={v}" for k, v in kernel.src.signature.items()) \
        if hasattr(kernel, "src") else "as launched"
    print(f"// captured from running {path}: the first launch of `{fn.__name__}` ({sig})")
    for stage in wanted:
        text = kernel.asm[stage]
        text = text.decode() if isinstance(text, bytes) else str(text)
        _emit(stage, text, len(wanted) > 1)
    return True


def _make_ir(src: Any, backend: Any, options: Any, context: Any, path: Path) -> Any:
    from triton.compiler.errors import CompilationError

    try:
        return src.make_ir(backend.target, options, backend.get_codegen_implementation(options),
                           backend.get_module_map(), context)
    except CompilationError as exc:
        # Triton's message is a multi-line source excerpt; keep file:line and the reason.
        line = getattr(exc.node, "lineno", None)
        fn = getattr(src, "fn", None)
        start = getattr(fn, "starting_line_number", None)
        # Triton numbers lines from the `def` (decorators stripped); getsourcelines from the
        # first decorator.
        raw = list(getattr(fn, "raw_src", []) or [])
        skip = next((i for i, t in enumerate(raw) if t.lstrip().startswith("def ")), 0)
        where = f"{path}:{start + skip + line - 1}" if line and start else str(path)
        cause = exc.__cause__
        detail = exc.error_message or (str(cause) if cause else type(exc).__name__)
        _fail(f"Triton front end at {where}: {detail.strip().splitlines()[-1]}")


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _info() -> None:
    """Which engine and target this machine gets, and whether Triton picks the Metal driver."""
    import triton

    from msltrans.backend.driver import MetalDriver, _other_gpu_driver_active, select_engine

    print(f"msltrans {__import__('msltrans').__version__}, triton {triton.__version__}")
    print(f"metal driver active: {MetalDriver.is_active()} "
          f"(another GPU driver active: {_other_gpu_driver_active()})")
    print(f"engine: {select_engine()} (MSLTRANS_ENGINE overrides)")
    driver = MetalDriver()
    print(f"target: {driver.get_current_target()}")
    for key, value in driver.utils.get_device_properties(0).items():
        print(f"  {key}: {value}")
    if driver.engine_name == "sim":
        from msltrans.sim import find_compiler

        print(f"simulator compiler: {' '.join(find_compiler().argv)}")


def build_parser() -> argparse.ArgumentParser:
    from msltrans.ir.pipeline import DEFAULT_CHIP

    parser = _Parser(prog="msltrans", description="Run Triton kernels on Apple GPUs: inspect "
                     "what a kernel becomes (TTIR, TTGIR, Metal Shading Language).",
                     epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    dump = sub.add_parser("dump", help="print a kernel's TTIR, TTGIR and/or MSL",
                          description="Compile one @triton.jit kernel (or a .ttgir file) with "
                          "the Metal plugin's stages and print the chosen stage.",
                          epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    dump.add_argument("file", help="a Python file with @triton.jit kernels, or a .ttgir file")
    dump.add_argument("--kernel", help="which kernel, when the file defines several")
    dump.add_argument("--stage", choices=(*STAGES, "all"), default="msl",
                      help="what to print (default: msl, with launch metadata as comments)")
    dump.add_argument("--num-warps", type=int, default=None,
                      help="simdgroups per threadgroup (1..32, default 4)")
    dump.add_argument("--signature", action="append", metavar="NAME=TYPE[,NAME=TYPE]",
                      help="argument types, e.g. x_ptr=*fp16,n=i32 (repeatable)")
    dump.add_argument("--constexpr", action="append", metavar="NAME=VALUE[,NAME=VALUE]",
                      help="constexpr values, e.g. BLOCK_SIZE=1024 (repeatable)")
    dump.add_argument("--unaligned", action="append", metavar="NAME[,NAME]",
                      help="pointers NOT to assume 16-byte aligned (default: all are, as "
                           "Triton's launcher specialises torch tensors)")
    dump.add_argument("--over-2gb", action="append", metavar="NAME[,NAME]",
                      help="pointers into buffers of 2 GB or more (default: all are under, "
                           "and their pointers become 32-bit offsets)")
    dump.add_argument("--divisible", action="append", metavar="NAME[,NAME]",
                      help="int arguments that are multiples of 16 (tt.divisibility=16)")
    dump.add_argument("--no-fp-fusion", action="store_true",
                      help="compile as enable_fp_fusion=False (no fma contraction of a*b+c)")
    dump.add_argument("--chip", default=DEFAULT_CHIP, help=f"target chip (default {DEFAULT_CHIP})")
    dump.add_argument("--html", metavar="OUT.html", help="write a self-contained page instead: "
                      "source | TTGIR | MSL side by side, launch metadata, layout pictures")
    sub.add_parser("info", help="show the engine, target and device properties",
                   description="Show which engine (mps or sim) and target this machine gets.")
    test = sub.add_parser("selftest", help="run msltrans's self-test and write a JSON receipt",
                          description=SELFTEST_HELP,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    test.add_argument("--out", default=None, help="receipt path (default: "
                      "msltrans-selftest-<chip>-<date>.json in the current directory)")
    test.add_argument("--full", action="store_true",
                      help="every case (more dot dtypes, causal attention, math functions)")
    test.add_argument("--case", action="append", help="run only this case (repeatable)")
    test.add_argument("--time", dest="time_kernels", action="store_true", default=None,
                      help="time the tutorial kernels against torch (default: on MPS only)")
    test.add_argument("--timeout", type=float, default=None, metavar="S",
                      help="seconds a case may run before it is killed and recorded as a "
                           "timeout (default: the case's own, 300)")
    test.add_argument("--in-process", action="store_true",
                      help="run every case in this process (debugging; a crash loses the run)")
    test.add_argument("--write-reference", action="store_true", help=argparse.SUPPRESS)
    from msltrans.teach.cli_hooks import add_layout_parser

    add_layout_parser(sub)
    from msltrans.cli_profile import add_parser as add_profile

    add_profile(sub)
    return parser


SELFTEST_HELP = """\
Run a curated set of kernels (Triton's tutorials 01-06 at small sizes, reductions, scans,
atomics, dots, attention) and probes (subnormals, the MSL version the compiler uses,
atomic_ulong max/min, cross-threadgroup coherence, non-ASCII source, the math mode, the fp32
matrix product's order) on this machine's engine: the Apple GPU on a Mac, the CPU simulator
elsewhere. Every output is checked against a float64 reference and against the bytes the
simulator produced for the same inputs: bit for bit where the emitted MSL has no approximate
function, else within the bound the MSL specification's accuracy tables give. Each case runs
in a worker process; a crash or a hang is recorded under the case's name and the rest still
run. On a Mac the tutorial kernels are timed against torch's own MPS ops. The JSON receipt
is rewritten after every case; exit status 1 if a case fails, errs, crashes or hangs.
"""


def _selftest(args: argparse.Namespace) -> int:
    import datetime as dt
    import re

    from msltrans import selftest

    if args.write_reference:
        sizes = selftest.write_reference()
        print(f"wrote {len(sizes)} outputs, {sum(sizes.values())} bytes")
        return 0
    chip = re.sub(r"[^a-z0-9]+", "-", selftest.chip_name().lower()).strip("-")
    out = Path(args.out) if args.out else Path(
        f"msltrans-selftest-{chip}-{dt.date.today().isoformat()}.json")
    receipt = selftest.run(full=args.full, time_kernels=args.time_kernels, only=args.case,
                           progress=lambda line: print(line, file=sys.stderr), out=out,
                           isolate=not args.in_process, timeout_s=args.timeout)
    summary = ", ".join(f"{n} {v}" for v, n in receipt["summary"].items() if n)
    print(f"msltrans selftest ({receipt['set']}, {receipt['environment']['engine']}): "
          f"{summary}; receipt: {out}")
    bad = ("fail", "error", "crash", "timeout")
    return 1 if any(receipt["summary"].get(v) for v in bad) else 0


def main(argv: list[str] | None = None) -> int:
    import os

    args = build_parser().parse_args(argv)
    if args.command == "layout" or getattr(args, "html", None):  # the teaching views
        from msltrans.teach.cli_hooks import run

        return run(args)
    if os.environ.get("MSLTRANS_TRACEBACK"):  # for debugging msltrans itself
        if args.command == "info":
            _info()
        elif args.command == "profile":
            from msltrans.cli_profile import main as profile_main

            profile_main(args, _fail)
        elif args.command == "selftest":
            return _selftest(args)
        else:
            _compile_and_print(args)
        return 0
    try:
        if args.command == "dump":
            _compile_and_print(args)
        elif args.command == "info":
            _info()
        elif args.command == "profile":
            from msltrans.cli_profile import main as profile_main

            profile_main(args, _fail)
        elif args.command == "selftest":
            return _selftest(args)
    except SystemExit:
        raise
    except (MetalNonRecoverableError, ValueError, KeyError, TypeError, AssertionError,
            RuntimeError) as exc:
        _fail(_describe(exc))
    except Exception as exc:  # Triton's CompilationError and friends
        _fail(f"{type(exc).__name__}: {_describe(exc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
