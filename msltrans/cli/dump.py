"""`msltrans dump`: print a kernel's TTIR, TTGIR and/or MSL.

The stages are the plugin's own (msltrans.toolchain runs `MetalBackend.add_stages`: ttir ->
ttgir -> msl), so what it prints is exactly what `kernel[grid](...)` would compile.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from msltrans import toolchain
from msltrans.cli import signature
from msltrans.cli.common import fail, fp_fusion, names, parse_constexpr, split_pairs

STAGES = toolchain.STAGES


def add_parser(sub: argparse._SubParsersAction, epilog: str) -> None:
    from msltrans.ir.pipeline import DEFAULT_CHIP

    dump = sub.add_parser("dump", help="print a kernel's TTIR, TTGIR and/or MSL",
                          description="Compile one @triton.jit kernel (or a .ttgir file) with "
                          "the Metal plugin's stages and print the chosen stage.",
                          epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
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


def assume(args: argparse.Namespace, fn: object) -> signature.Assumed:
    """The signature the flags give (and what is assumed where they say nothing)."""
    return signature.infer(
        fn, split_pairs(args.signature, "--signature"), split_pairs(args.constexpr, "--constexpr"),
        names(getattr(args, "unaligned", None)), names(getattr(args, "divisible", None)),
        parse_constexpr, frozenset(names(getattr(args, "over_2gb", None))))


def has_flags(args: argparse.Namespace) -> bool:
    return bool(args.signature or args.constexpr or getattr(args, "unaligned", None)
                or getattr(args, "divisible", None) or getattr(args, "over_2gb", None))


def _emit(stage: str, text: str, show_header: bool) -> None:
    if show_header:
        print(f"// ===== {stage} =====")
    print(text.rstrip("\n"))


def run(args: argparse.Namespace) -> None:
    """Compile and print the chosen stage(s)."""
    from triton.compiler.errors import CompilationError

    path = Path(args.file)
    if not path.is_file():
        fail(f"no such file: {path}")
    wanted = STAGES if args.stage == "all" else (args.stage,)
    options = {"enable_fp_fusion": fp_fusion(args)}
    if path.suffix == ".ttgir":
        if "ttir" in wanted and args.stage != "all":
            fail("a .ttgir input has no ttir stage; use --stage ttgir or --stage msl")
        out = toolchain.compile_kernel(path, num_warps=args.num_warps, options=options,
                                       chip=args.chip, until=wanted[-1])
        if "ttgir" in wanted:
            _emit("ttgir", out.ttgir or "", len(wanted) > 1)
        wanted = tuple(s for s in wanted if s == "msl")
    else:
        fn = toolchain.load_kernel(path, args.kernel)
        if not has_flags(args) and toolchain.runs_as_script(path) and _dump_from_run(
                path, fn, wanted):
            return  # the script's own first launch: its real signature and specialisations
        try:
            assumed = assume(args, fn)
        except signature.MissingSpecialization as missing:
            fail(str(missing))
        header = assumed.header()
        if header:
            print(header)
        try:
            out = toolchain.compile_kernel(
                fn, assumed.signature, assumed.constexprs, num_warps=args.num_warps or 4,
                attrs=assumed.attrs(list(fn.arg_names)), options=options, chip=args.chip,
                until=wanted[-1])
        except CompilationError as exc:
            line, detail = toolchain.front_end_error(exc, fn)
            fail(f"Triton front end at {f'{path}:{line}' if line else path}: {detail}")
    for stage in wanted:
        text = getattr(out, stage) or ""
        if stage == "msl":
            text = text.rstrip("\n") + "\n" + toolchain.launch_comment(out.metadata)
        _emit(stage, text, len(wanted) > 1)


def _dump_from_run(path: Path, fn: object, wanted: tuple[str, ...]) -> bool:
    """Run the script as `python path` and print what its first launch of `fn` compiled;
    False when it never launched `fn` (the caller then assumes a signature).

    The signature, constexprs and specialisations are then the ones the program really used,
    so `msltrans dump examples/vector_add.py` needs no flags.
    """
    import sys

    kernel = toolchain.first_launch(path, fn)
    name = getattr(fn, "__name__", "?")
    if kernel is None:
        print(f"msltrans: {path} ran but never launched `{name}`: assuming its signature",
              file=sys.stderr)
        return False
    print(f"// captured from running {path}: the first launch of `{name}` "
          f"({toolchain.launch_signature(kernel)})")
    for stage in wanted:
        _emit(stage, toolchain.stage_text(kernel, stage), len(wanted) > 1)
    return True
