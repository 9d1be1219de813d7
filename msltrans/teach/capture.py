"""Compile one kernel the way `msltrans dump` does and keep what the teaching views show.

`capture(args)` takes the dump's own arguments (file, --kernel, --signature, --constexpr,
--num-warps, --no-fp-fusion, --chip) and returns a `Capture`: the TTGIR with its locations,
the MSL, the launch metadata, and the refusal if the kernel is refused. A refusal does not
stop the capture: the page shows it at its source line, with the stages that did succeed.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msltrans import cli, cli_signature
from msltrans.errors import MetalNonRecoverableError


@dataclass(frozen=True)
class Refusal:
    """Why the kernel does not compile, and where (`file` is a base name, as the op comments
    and MetalNonRecoverableError write it)."""

    stage: str  # "front end", "ttir", "ttgir" or "msl"
    message: str
    op: str | None = None
    file: str | None = None
    line: int | None = None


@dataclass
class Capture:
    path: Path  # the file given on the command line (.py or .ttgir)
    kernel: str
    ttgir: str | None = None  # printed with locations (`loc(...)`)
    msl: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    num_warps: int | None = None
    refusal: Refusal | None = None
    note: str = ""  # how the specialization was chosen


_LOC_RE = re.compile(r"^(?P<file>.+):(?P<line>\d+)$")


def _refusal(stage: str, exc: MetalNonRecoverableError) -> Refusal:
    file = line = None
    m = _LOC_RE.match(exc.location or "")
    if m:
        file, line = m.group("file"), int(m.group("line"))
    return Refusal(stage, str(exc), exc.op, file, line)


def _front_end_refusal(exc: Any, src: Any, path: Path) -> Refusal:
    """Triton's CompilationError → the user's file:line (Triton counts from the `def`)."""
    node_line = getattr(exc.node, "lineno", None)
    fn = getattr(src, "fn", None)
    start = getattr(fn, "starting_line_number", None)
    raw = list(getattr(fn, "raw_src", []) or [])
    skip = next((i for i, t in enumerate(raw) if t.lstrip().startswith("def ")), 0)
    line = start + skip + node_line - 1 if node_line and start else None
    cause = exc.__cause__
    detail = exc.error_message or (str(cause) if cause else type(exc).__name__)
    return Refusal("front end", detail.strip().splitlines()[-1], None, path.name, line)


def capture(args: argparse.Namespace) -> Capture:
    """Compile as `msltrans dump` would (same kernel selection and flags)."""
    from triton import knobs
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, IRSource
    from triton.compiler.errors import CompilationError

    from msltrans.backend.compiler import MetalBackend

    path = Path(args.file)
    if not path.is_file():
        cli._fail(f"no such file: {path}")
    backend = MetalBackend(GPUTarget("metal", args.chip, 32))
    context = ir.context()
    ir.load_dialects(context)
    if path.suffix == ".ttgir":
        src: Any = IRSource(str(path), context, backend)
        opts = dict(src.parse_options())
        kernel, note = src.name.lstrip("@"), f"lowered from the saved TTGIR {path.name}"
    else:
        fn = cli._load_kernel(path, args.kernel)
        try:
            assumed = cli_signature.infer(
                fn, cli._split_pairs(args.signature, "--signature"),
                cli._split_pairs(args.constexpr, "--constexpr"),
                cli._names(getattr(args, "unaligned", None)),
                cli._names(getattr(args, "divisible", None)), cli._parse_constexpr)
        except cli_signature.MissingSpecialization as missing:
            if args.signature or args.constexpr or not cli._runs_as_script(path):
                cli._fail(str(missing))
            return capture_from_run(path, fn)
        signature, constexprs = assumed.signature, assumed.constexprs
        src = ASTSource(fn, signature, constexprs, assumed.attrs(list(fn.arg_names)))
        opts = {"num_warps": args.num_warps or 4}
        kernel = fn.__name__
        note = "compiled for " + ", ".join(
            f"{k}={constexprs[k]!r}" if k in constexprs else f"{k}: {t}"
            for k, t in signature.items())
    opts["enable_fp_fusion"] = knobs.language.default_fp_fusion and not args.no_fp_fusion
    options = backend.parse_options(opts)
    out = Capture(path, kernel, num_warps=options.num_warps, note=note)
    stages: dict[str, Any] = {}
    backend.add_stages(stages, options, src.language)
    names = list(stages)
    if isinstance(src, IRSource):
        module = src.make_ir(backend.target, options, None, None, context)
        out.ttgir = str(module)
        todo = names[names.index("ttgir") + 1:]
    else:
        try:
            module = src.make_ir(backend.target, options,
                                 backend.get_codegen_implementation(options),
                                 backend.get_module_map(), context)
        except CompilationError as exc:
            out.refusal = _front_end_refusal(exc, src, path)
            return out
        todo = names[names.index(src.ext):]  # the front end's module runs the ttir stage too
    metadata: dict[str, Any] = {}
    for name in todo:
        try:
            module = stages[name](module, metadata)
        except MetalNonRecoverableError as exc:
            out.refusal = _refusal(name, exc)
            return out
        if name == "ttgir":
            out.ttgir = str(module)
        elif name == "msl":
            out.msl = str(module)
    out.metadata = metadata
    return out


def capture_from_run(path: Path, fn: Any) -> Capture:
    """Run the script (`python path`) and keep the first launch of `fn`, as `dump` does."""
    kernel = cli.first_launch(path, fn)
    if kernel is None:
        cli._fail(f"{path} ran but never launched `{fn.__name__}`: pass --signature/--constexpr")

    def text(stage: str) -> str:
        got = kernel.asm[stage]
        return got.decode() if isinstance(got, bytes) else str(got)

    meta = kernel.metadata
    metadata = meta._asdict() if hasattr(meta, "_asdict") else dict(vars(meta))
    sig = ", ".join(f"{k}={v}" for k, v in kernel.src.signature.items()) \
        if hasattr(kernel, "src") else "as launched"
    return Capture(path, fn.__name__, text("ttgir"), text("msl"), metadata,
                   metadata.get("num_warps"),
                   note=f"captured from running {path.name}: its first launch ({sig})")
