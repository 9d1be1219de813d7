"""What every `msltrans` subcommand shares: one-line errors, and the parsing of the
kernel-specialisation flags (`--signature`, `--constexpr`, `--unaligned`, ...)."""

from __future__ import annotations

import argparse
import ast
import sys
from typing import Any, NoReturn


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        fail(f"{message} (see `{self.prog} --help`)")


def fail(message: str) -> NoReturn:
    print(f"msltrans: error: {message}", file=sys.stderr)
    raise SystemExit(1)


def describe(exc: BaseException) -> str:
    """An exception as the one line the CLI prints."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def split_pairs(items: list[str] | None, flag: str) -> dict[str, str]:
    """`["a=1,b=2", "c=3"]` -> {"a": "1", "b": "2", "c": "3"} (repeatable NAME=VALUE flags)."""
    out: dict[str, str] = {}
    for item in items or []:
        for pair in item.split(","):
            if not pair.strip():
                continue
            if "=" not in pair:
                fail(f"{flag} expects NAME=VALUE, got {pair!r}")
            name, value = pair.split("=", 1)
            out[name.strip()] = value.strip()
    return out


def names(items: list[str] | None) -> set[str]:
    """`["a,b", "c"]` -> {"a", "b", "c"} (repeatable NAME[,NAME] flags)."""
    return {n.strip() for item in items or [] for n in item.split(",") if n.strip()}


def parse_constexpr(text: str) -> Any:
    """A --constexpr VALUE: a Python literal, a Triton dtype (`tl.float16`) or a bare word."""
    if text.startswith("tl."):
        import triton.language as tl

        value = getattr(tl, text[3:], None)
        if value is None:
            fail(f"unknown Triton dtype {text!r} in --constexpr")
        return value
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # a bare word: pass it as a string constexpr


def fp_fusion(args: argparse.Namespace) -> bool:
    """enable_fp_fusion as Triton's default has it, off with --no-fp-fusion."""
    from triton import knobs

    return bool(knobs.language.default_fp_fusion and not args.no_fp_fusion)
