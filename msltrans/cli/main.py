"""`msltrans` command line: the parser and the dispatch to each subcommand's module
(`dump`, `views` for `layout` and `dump --html`, `profile`; `info` and `selftest` here).
Errors are one line on stderr and exit status 1 (msltrans.cli.common).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from msltrans import settings
from msltrans.cli import dump, profile, views
from msltrans.cli.common import Parser, describe, fail
from msltrans.errors import MetalNonRecoverableError

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


def _info() -> None:
    """Which engine and target this machine gets, and whether Triton picks the Metal driver."""
    import triton

    from msltrans.backend.driver import MetalDriver, other_gpu_driver_active, select_engine

    print(f"msltrans {__import__('msltrans').__version__}, triton {triton.__version__}")
    print(f"metal driver active: {MetalDriver.is_active()} "
          f"(another GPU driver active: {other_gpu_driver_active()})")
    print(f"engine: {select_engine()} (MSLTRANS_ENGINE overrides)")
    driver = MetalDriver()
    print(f"target: {driver.get_current_target()}")
    for key, value in driver.utils.get_device_properties(0).items():
        print(f"  {key}: {value}")
    if driver.engine_name == "sim":
        from msltrans.sim import find_compiler

        print(f"simulator compiler: {' '.join(find_compiler().argv)}")


def build_parser() -> argparse.ArgumentParser:

    parser = Parser(prog="msltrans", description="Run Triton kernels on Apple GPUs: inspect "
                     "what a kernel becomes (TTIR, TTGIR, Metal Shading Language).",
                     epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    dump.add_parser(sub, EPILOG)
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
    views.add_layout_parser(sub)
    profile.add_parser(sub)
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

    args = build_parser().parse_args(argv)
    if args.command == "layout" or getattr(args, "html", None):  # the teaching views
        return views.run(args)
    if settings.is_set(settings.TRACEBACK):  # for debugging msltrans itself
        if args.command == "info":
            _info()
        elif args.command == "profile":
            profile.main(args)
        elif args.command == "selftest":
            return _selftest(args)
        else:
            dump.run(args)
        return 0
    try:
        if args.command == "dump":
            dump.run(args)
        elif args.command == "info":
            _info()
        elif args.command == "profile":
            profile.main(args)
        elif args.command == "selftest":
            return _selftest(args)
    except SystemExit:
        raise
    except (MetalNonRecoverableError, ValueError, KeyError, TypeError, AssertionError,
            RuntimeError) as exc:
        fail(describe(exc))
    except Exception as exc:  # Triton's CompilationError and friends
        fail(f"{type(exc).__name__}: {describe(exc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
