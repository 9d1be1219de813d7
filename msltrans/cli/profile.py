"""`msltrans profile script.py`: run a program on the CPU simulator with the profiler on and
print, per kernel and per Triton source line, what its kernels did (msltrans.sim.profiling)
and a roofline estimate of their time on an Apple chip."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from msltrans import settings, toolchain
from msltrans.cli.common import fail

DESCRIPTION = """\
Run a Python program (its kernels on the CPU Metal simulator) and report, per kernel and
per Triton source line: global load/store instructions by access width, bytes, 128-byte
segments per simdgroup-wide access (coalescing), threadgroup-memory accesses and bank
conflicts (32 banks x 4 bytes), barriers, SIMD shuffles and reductions, simdgroup
multiply-accumulates, and an ESTIMATED time on an Apple chip from a roofline of public
figures. The program's own output goes to stderr; the report to stdout."""


def add_parser(sub: Any) -> None:
    from msltrans.sim.profile_report import CHIPS

    p = sub.add_parser("profile", help="run a program with the simulator's profiler",
                       description=DESCRIPTION)
    p.add_argument("file", help="a Python program that launches @triton.jit kernels")
    p.add_argument("args", nargs="*", help="arguments for the program (after --)")
    p.add_argument("--kernel", help="report only this kernel")
    p.add_argument("--chip", default="apple-m4-max", choices=sorted(CHIPS),
                   help="chip of the time estimate (default apple-m4-max)")
    p.add_argument("--launches", type=int, default=1, metavar="N",
                   help="profile the first N launches of each kernel; later ones run at full "
                        "speed (default 1; 0: all)")
    p.add_argument("--json", metavar="PATH", help="also write the counters as JSON")


def main(args: argparse.Namespace) -> None:
    path = Path(args.file)
    if not path.is_file():
        fail(f"no such file: {path}")
    # The profiler is the simulator's: make the plugin pick it even on a Mac.
    if settings.set_default(settings.ENGINE, "sim") != "sim":
        fail("msltrans profile runs kernels on the simulator; unset MSLTRANS_ENGINE")
    import msltrans.sim as sim

    script_args = args.args[1:] if args.args[:1] == ["--"] else args.args
    with sim.profile(args.chip, launches_per_kernel=args.launches or None) as prof:
        try:
            toolchain.run_script(path, script_args)
        except Exception as exc:  # the user's program: report, don't trace back
            fail(f"running {path} failed: {type(exc).__name__}: {exc}")
    kernels = prof.kernels
    if args.kernel is not None:
        if args.kernel not in kernels:
            fail(f"{path} did not launch a kernel {args.kernel!r} "
                 f"(launched: {', '.join(sorted(kernels)) or 'none'})")
        kernels = {args.kernel: kernels[args.kernel]}
    if not kernels:
        fail(f"{path} ran but launched no kernel on the simulator")
    from msltrans.sim.profile_report import as_dict, format_report

    print(format_report(kernels, args.chip).rstrip("\n"))
    if args.json:
        Path(args.json).write_text(json.dumps(as_dict(kernels, args.chip), indent=1) + "\n",
                                   encoding="utf-8")
