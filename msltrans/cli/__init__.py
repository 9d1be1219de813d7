"""`msltrans` command line: show what a Triton kernel becomes on the way to Metal.

- `main`: the parser and the dispatch; `info` and `selftest`.
- `dump`: `msltrans dump` (compiles through msltrans.toolchain).
- `signature`: what `dump` assumes about a kernel's arguments when no launch shows them.
- `views`: `msltrans layout` and `dump --html` (the teaching views, msltrans.teach).
- `profile`: `msltrans profile script.py` (the simulator's profiler).
- `common`: one-line errors and the parsing of the specialisation flags.
"""

from msltrans.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
