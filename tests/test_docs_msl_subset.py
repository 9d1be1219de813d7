"""docs/msl-subset.md is generated from msltrans/msl_subset.py and the table matches what
msltrans emits: every Metal name in the templates and in the lowering's MSL strings is
listed, and every listed name occurs there."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from msltrans import msl_subset

ROOT = Path(__file__).resolve().parents[1]
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


def template_text() -> str:
    """The MSL of the templates: Jinja comments, tags and expressions and `//` comments out."""
    parts = []
    for path in sorted(p for p in (ROOT / "msltrans" / "templates").iterdir() if p.is_file()):
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"\{#.*?#\}|\{%.*?%\}|\{\{.*?\}\}", " ", text, flags=re.S)
        parts.append(re.sub(r"//[^\n]*", "", text))
    return "\n".join(parts)


def lowering_strings() -> list[str]:
    """String constants of the modules that write MSL (msltrans/lower)."""
    out = []
    for path in sorted((ROOT / "msltrans" / "lower").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docstrings:
                out.append(re.sub(r"//[^\n]*", "", node.value))
    return out


def metal_names_in(text: str, call_form_only: bool = False) -> set[str]:
    """The Metal names (listed or known-unused) in MSL `text`, comments and strings out."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"", " ", text, flags=re.S)
    vocab = set(msl_subset.all_names()) | msl_subset.UNUSED
    if call_form_only:
        return {m.group(1) for m in re.finditer(r"\b([A-Za-z_]\w*)(?:\(|<|::)", text)} & vocab
    return set(IDENT.findall(text)) & vocab


def test_doc_is_generated() -> None:
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_msl_subset.py"),
                          "--check"], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_every_metal_name_in_the_templates_is_listed() -> None:
    used = metal_names_in(template_text())
    unlisted = used - set(msl_subset.all_names())
    assert not unlisted, f"templates use {sorted(unlisted)}: add them to msltrans/msl_subset.py"


def test_every_metal_call_in_the_lowering_is_listed() -> None:
    # Strings hold messages too: only `name(` / `name<` / `name::` forms count here.
    used = set().union(*(metal_names_in(s, call_form_only=True) for s in lowering_strings()))
    unlisted = used - set(msl_subset.all_names())
    assert not unlisted, f"the lowering emits {sorted(unlisted)}: add them to msl_subset.py"


def test_every_listed_name_is_emitted_somewhere() -> None:
    corpus = template_text() + "\n".join(lowering_strings())
    emitted = set(IDENT.findall(corpus))
    # Names the lowering builds from parts (f"simdgroup_{t}8x8", f"{fn}(...)" from tables)
    # are in the tables' string constants as whole words or prefixes.
    missing = {n for n in msl_subset.all_names() if n not in emitted
               and not any(n.startswith(p) and len(p) > 6 for p in emitted)}
    assert not missing, f"listed but never emitted: {sorted(missing)}"
