"""`msltrans dump --html OUT.html` and `msltrans layout`: the teaching views' command line.

`msltrans.cli.main` registers these (`add_layout_parser`, the dump's `--html` flag) and hands
the parsed arguments to `run`; errors are one line on stderr and exit status 1, as for dump.
`capture(args)` compiles as `msltrans dump` does (same flags, msltrans.toolchain) and keeps
what the views show (msltrans.teach.capture.Capture).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from msltrans import settings, toolchain
from msltrans.cli import dump
from msltrans.cli.common import describe, fail, fp_fusion
from msltrans.errors import MetalNonRecoverableError
from msltrans.teach.capture import Capture, from_compiled, from_launch

LAYOUT_EPILOG = """\
examples:
  msltrans layout examples/broadcast_2d.py --value out --shape 16x64 -o out.png
      the layout of the 16x64 tensor value `out` of the kernel the script launches
  msltrans layout examples/broadcast_2d.py --value x -o layouts/
      every layout a value named `x` has, one picture each
  msltrans layout examples/vector_add.py --signature n_elements=i32 \\
      --constexpr BLOCK_SIZE=1024 -o layouts/
      every layout of the kernel, one picture each, into layouts/
  msltrans layout '#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8],
      warpsPerCTA = [4, 1], order = [1, 0]}>' --shape 32x64 -o blocked.svg
  msltrans layout 'tensor<16x64xf32, #ttg.slice<{dim = 0, parent = #ttg.blocked<...>}>>'
      an encoding given with its tensor type needs no --shape

The picture: each element coloured by the simdgroup that owns it, the owner's lane (large) and
register (r#) written in, replicated elements lighter with xN (N threads/registers hold it).
Tensors past 32x32 get an overview of all elements above the labelled window.
"""


def add_layout_parser(sub: Any) -> None:
    p = sub.add_parser("layout", help="draw a layout's ownership map (PNG or SVG)",
                       description="Draw which simdgroup, lane and register holds each "
                       "element of a tensor: for tensor values of a kernel, or for an "
                       "encoding given as text.",
                       epilog=LAYOUT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="a kernel .py or .ttgir file, or an encoding "
                   "(#ttg.blocked<...>, #ttg.linear<...>, #ttg.slice<...>, #ttg.dot_op<...>, "
                   "or tensor<SHAPExTYPE, ENCODING>)")
    p.add_argument("--value", help="the tensor value(s) of this Python name (default: "
                   "every layout of the kernel)")
    p.add_argument("--shape", help="tensor shape for an encoding, e.g. 32x64; for a kernel, "
                   "only the values of this shape")
    p.add_argument("-o", "--out", default=".", help="a .png or .svg file (one picture), or a "
                   "directory (default: the current one)")
    p.add_argument("--svg", action="store_true", help="into a directory: SVG, not PNG")
    p.add_argument("--kernel", help="which kernel, when the file defines several")
    p.add_argument("--num-warps", type=int, default=None, help="as for dump (default 4)")
    p.add_argument("--signature", action="append", metavar="NAME=TYPE[,NAME=TYPE]",
                   help="argument types, as for dump")
    p.add_argument("--constexpr", action="append", metavar="NAME=VALUE[,NAME=VALUE]",
                   help="constexpr values, as for dump")
    p.add_argument("--no-fp-fusion", action="store_true", help="as for dump")
    from msltrans.ir.pipeline import DEFAULT_CHIP

    p.add_argument("--chip", default=DEFAULT_CHIP, help=f"target chip (default {DEFAULT_CHIP})")


def run(args: argparse.Namespace) -> int:
    """Run `layout` or `dump --html`, reporting errors as `msltrans dump` does."""
    action = _layout if args.command == "layout" else _dump_html
    if settings.is_set(settings.TRACEBACK):
        return action(args)
    try:
        return action(args)
    except SystemExit:
        raise
    except (MetalNonRecoverableError, ValueError, KeyError, TypeError, AssertionError,
            RuntimeError, OSError) as exc:
        fail(describe(exc))
    except Exception as exc:  # Triton's errors and friends
        fail(f"{type(exc).__name__}: {describe(exc)}")


def _dump_html(args: argparse.Namespace) -> int:
    from msltrans.teach.page import build_page

    out = Path(args.html)
    cap = capture(args)
    text = build_page(cap)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({len(text) // 1024} KiB): {cap.kernel}")
    if cap.refusal is not None:
        print(f"msltrans: note: the kernel is refused ({cap.refusal.message}); the page shows "
              "where", file=sys.stderr)
    return 0


def capture(args: argparse.Namespace) -> Capture:
    """Compile as `msltrans dump` would (same kernel selection and flags); a refusal does
    not stop the capture: the page shows it at its source line."""
    path = Path(args.file)
    if not path.is_file():
        fail(f"no such file: {path}")
    options = {"enable_fp_fusion": fp_fusion(args)}
    if path.suffix == ".ttgir":
        out = toolchain.compile_kernel(path, options=options, chip=args.chip, partial=True)
        return from_compiled(path, out, f"lowered from the saved TTGIR {path.name}")
    fn = toolchain.load_kernel(path, args.kernel)
    try:
        assumed = dump.assume(args, fn)
    except dump.signature.MissingSpecialization as missing:
        if args.signature or args.constexpr or not toolchain.runs_as_script(path):
            fail(str(missing))
        kernel = toolchain.first_launch(path, fn)
        if kernel is None:
            fail(f"{path} ran but never launched `{fn.__name__}`: pass --signature/--constexpr")
        return from_launch(path, fn.__name__, kernel)
    signature, constexprs = assumed.signature, assumed.constexprs
    out = toolchain.compile_kernel(
        fn, signature, constexprs, num_warps=args.num_warps or 4,
        attrs=assumed.attrs(list(fn.arg_names)), options=options, chip=args.chip, partial=True)
    note = "compiled for " + ", ".join(
        f"{k}={constexprs[k]!r}" if k in constexprs else f"{k}: {t}"
        for k, t in signature.items())
    return from_compiled(path, out, note, fn)


# ---- msltrans layout -----------------------------------------------------------------------

def _parse_shape(text: str | None) -> tuple[int, ...]:
    if not text:
        fail("an encoding needs --shape (e.g. --shape 32x64), or give it as "
                  "tensor<32x64xf32, ENCODING>")
    try:
        shape = tuple(int(s) for s in re.split(r"[x,]", text.strip()) if s.strip())
    except ValueError:
        fail(f"--shape {text!r}: expected sizes like 32x64")
    return _checked(shape, text)


def _checked(shape: tuple[int, ...], text: str) -> tuple[int, ...]:
    if not shape or any(s <= 0 or s & (s - 1) for s in shape):
        fail(f"shape {text!r}: sizes must be powers of two, as Triton's tensors are")
    return shape


Todo = list[tuple[str, str, tuple[int, ...], str]]  # file stem, encoding, shape, title


def _from_encoding(args: argparse.Namespace) -> Todo:
    from msltrans.ir.types import TensorType, parse_type

    text = args.source.strip()
    if text.startswith("tensor<"):
        t = parse_type(text)
        if not isinstance(t, TensorType) or not t.encoding:
            fail(f"{text[:60]!r} is not a tensor type with an encoding")
        enc, shape = t.encoding, _checked(tuple(t.shape), "x".join(map(str, t.shape)))
        if args.shape and _parse_shape(args.shape) != shape:
            fail(f"--shape {args.shape} differs from the tensor type's {shape}")
    else:
        enc, shape = text, _parse_shape(args.shape)
    if re.fullmatch(r"#\w+", enc):
        fail(f"{enc} is an alias: pass the encoding it stands for (the module's "
                  f"`{enc} = #ttg...` line)")
    kind = re.match(r"#ttg\.(\w+)", enc)
    name = kind.group(1) if kind else "layout"
    shape_text = "x".join(map(str, shape))
    return [(f"{name}-{shape_text}", enc, shape, f"#{name} layout, tensor {shape_text}")]


def _from_kernel(args: argparse.Namespace) -> Todo:
    from msltrans.teach.values import layout_uses, read_module_text, tensor_values

    args.file = args.source
    cap = capture(args)
    if cap.ttgir is None:
        assert cap.refusal is not None
        fail(cap.refusal.message)
    module = read_module_text(cap.ttgir)
    uses = layout_uses(cap.ttgir, module)
    if args.value is not None:
        names = sorted({v.name for v, _ in tensor_values(module) if v.name})
        if args.value not in names:
            fail(f"kernel `{cap.kernel}` has no tensor value named {args.value!r}; it has: "
                      f"{', '.join(names) or 'none'}")
        uses = [u for u in uses if args.value in u.values]
    if args.shape:
        shape = _parse_shape(args.shape)
        have = sorted({u.shape_text for u in uses})
        uses = [u for u in uses if u.shape == shape]
        if not uses:
            fail(f"no {'value ' + repr(args.value) if args.value else 'tensor'} of shape "
                      f"{args.shape}; shapes: {', '.join(have)}")
    out = []
    for u in uses:
        stem = (f"{args.value}-" if args.value else "") + f"{u.short}-{u.shape_text}"
        names = ", ".join(u.values[:8]) + (", ..." if len(u.values) > 8 else "")
        out.append((stem, u.encoding, u.shape,
                    f"{cap.kernel}: {u.short} tensor {u.shape_text}; values: {names}"))
    return out


def _file_name(stem: str) -> str:
    return re.sub(r"[^\w.-]+", "_", stem.replace("#ttg.", "").replace("#", "")).strip("_")[:120]


def _layout(args: argparse.Namespace) -> int:
    from msltrans.layout import decode_layout
    from msltrans.teach import draw
    from msltrans.teach.ownership import Ownership

    is_text = args.source.lstrip().startswith(("#", "tensor<"))
    if is_text and args.value:
        fail("--value names a value of a kernel; an encoding has none")
    todo = _from_encoding(args) if is_text else _from_kernel(args)
    out = Path(args.out)
    one_file = out.suffix.lower() in (".png", ".svg")
    if one_file and len(todo) != 1:
        fail(f"{len(todo)} layouts to draw: give -o a directory, not {out.name}")
    for stem, enc, shape, title in todo:
        own = Ownership(decode_layout(enc, shape))
        fig, _ = draw.draw(own, title, f"{enc}\n{own.summary()}")
        path = out if one_file else out / (_file_name(stem) + (".svg" if args.svg else ".png"))
        path.parent.mkdir(parents=True, exist_ok=True)
        draw.save(fig, str(path))
        print(f"wrote {path}: {own.summary()}")
    return 0
