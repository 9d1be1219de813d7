"""The repository's "only our own code" rule as a checker (tests/test_own_code.py runs it).

Two things fail it:

- a *provenance claim*: a sentence of prose (a Python docstring or comment; any text in a
  markdown, MSL, template, C or shell file) in which a file says where its code came from. A
  sentence is a claim when it names a third-party origin (`ORIGIN`: tutorial, upstream,
  triton-lang, ATen, PyTorch, ...) and uses a provenance word (`PROVENANCE`) that is not
  negated ("never ..."). A word in double quotes or backticks is mentioned, not used. The
  word "unmodified" is also how this project describes *running* third-party code from
  outside the repository ("runs Triton's tutorials unmodified from a fetched tree", "the
  upstream test files stay unmodified"), so it is no claim when a run verb (`RUN_VERB`)
  comes before it in the sentence;
- the name of a function of Triton's tutorials that only a copy would define (`COPY_MARKERS`).
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROVENANCE = re.compile(r"\b(copied|cop(?:y|ies) of|verbatim|unmodified|adapted from|"
                        r"ported from)\b", re.I)
ORIGIN = re.compile(r"\b(tutorials?|upstream|triton-lang|third[- ]party|aten|pytorch|c10|"
                    r"liger|mlx|intel)\b|python/tutorials", re.I)
NEGATION = re.compile(r"\b(never|not|no longer|nothing)\s+(?:be(?:en)?\s+)?\W*$", re.I)
RUN_VERB = re.compile(r"\b(run|runs|running|ran|execute[sd]?|executing|stays?|remains?)\b",
                      re.I)
_MENTION = re.compile(r'"[^"]*"|`[^`]*`|\u201c[^\u201d]*\u201d')
# Spelled in pieces so that this file does not hold what it looks for.
COPY_MARKERS = tuple("_".join(parts) for parts in (
    ("", "attn", "fwd", "inner"), ("", "attn", "bwd", "dkdv"), ("", "layer", "norm", "fwd",
                                                                 "fused")))
_MARKER = re.compile(r"\b(" + "|".join(map(re.escape, COPY_MARKERS)) + r")\b")
# Prose outside Python: paragraphs, list items and table cells are separate blocks.
_BLOCK_BREAK = re.compile(r"\n\s*\n|\n\s*(?:[-*+]|\d+\.)\s+|\|")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'*_\[])")
_BINARY_SUFFIXES = {".npz", ".npy", ".png", ".jpg", ".pdf", ".so", ".pch", ".gz", ".zip"}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str  # "claim" or "marker"
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}: {self.text}"


def provenance_claim(sentence: str) -> bool:
    """Whether one sentence says that it (its file) holds third-party code."""
    if not ORIGIN.search(sentence):
        return False
    used = _MENTION.sub(lambda m: " " * len(m.group(0)), sentence)
    for m in PROVENANCE.finditer(used):
        before = used[:m.start()]
        if NEGATION.search(before[-40:]):
            continue
        if m.group(1).lower() == "unmodified" and RUN_VERB.search(before):
            continue
        return True
    return False


def sentences(block: str) -> list[str]:
    flat = " ".join(block.split())
    return [s for s in _SENTENCE_END.split(flat) if s]


def _prose_blocks(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line, block) for non-Python text."""
    start = 0
    for m in [*_BLOCK_BREAK.finditer(text), None]:
        end = m.start() if m else len(text)
        if text[start:end].strip():
            yield text.count("\n", 0, start) + 1, text[start:end]
        if m:
            start = m.end()


def _python_prose(text: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every docstring, every run of consecutive comment lines and every
    comment after code."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        yield from _prose_blocks(text)
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                for line, block in _prose_blocks(doc):
                    yield node.body[0].lineno + line - 1, block
    run: list[str] = []
    run_start = last = -1
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type != tokenize.COMMENT:
            continue
        line = tok.start[0]
        if not tok.line.lstrip().startswith("#"):  # after code: a block of its own
            yield line, tok.string.lstrip("#")
            continue
        if line != last + 1 and run:
            yield run_start, "\n".join(run)
            run = []
        if not run:
            run_start = line
        run.append(tok.string.lstrip("#"))
        last = line
    if run:
        yield run_start, "\n".join(run)


def check_text(path: str, text: str) -> list[Finding]:
    found = [Finding(path, text.count("\n", 0, m.start()) + 1, "marker", m.group(1))
             for m in _MARKER.finditer(text)]
    prose = _python_prose(text) if path.endswith(".py") else _prose_blocks(text)
    for line, block in prose:
        found += [Finding(path, line, "claim", s) for s in sentences(block)
                  if provenance_claim(s)]
    return found


def tracked_files(root: Path = ROOT) -> list[str]:
    """The repository's files: tracked or not ignored by git (a checkout without git: every
    file outside version-control, cache and build folders)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], cwd=root, capture_output=True, check=True,
                             timeout=60).stdout.decode()
        names = [n for n in out.split("\0") if n]
    except (OSError, subprocess.SubprocessError):
        names = []
    if not names:
        skip = {".git", "build", "dist", "__pycache__", ".pytest_cache", ".ruff_cache",
                ".hypothesis", ".cache"}
        names = [str(p.relative_to(root)) for p in root.rglob("*")
                 if p.is_file() and not skip & set(p.relative_to(root).parts)]
    return sorted(names)


def check_repository(root: Path = ROOT) -> list[Finding]:
    found: list[Finding] = []
    for name in tracked_files(root):
        path = root / name
        if path.suffix in _BINARY_SUFFIXES or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += check_text(name, text)
    return found
