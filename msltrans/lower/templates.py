"""The one home of the MSL text msltrans lays out, in msltrans/templates/:

- `*.metal`: static helper libraries, added whole to a kernel's program scope
  (`static_text`; the lowerings call `em.include(name)`);
- `*.metal.j2`: Jinja macros for parameterised text (`macro_text`; the lowerings call
  `em.render(macro, ...)`), and the kernel skeleton kernel.metal.j2 (`render`).

Python computes every number and picks every name; the templates only lay text out (no
arithmetic). One-line expressions are written in the lowerings themselves. The Jinja
environment is StrictUndefined: a missing name fails.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


@functools.cache
def _module(template: str) -> Any:
    return _environment().get_template(template).module


def macro_text(macro: str, **kw: object) -> str:
    """The text of a template macro: `name` in ops.metal.j2, or `file.name` in
    templates/file.metal.j2 (e.g. "dot.const_table")."""
    file, _, name = macro.rpartition(".")
    module = _module(f"{file or 'ops'}.metal.j2")
    if not hasattr(module, name):
        raise KeyError(f"no macro `{name}` in templates/{file or 'ops'}.metal.j2")
    return str(getattr(module, name)(**kw))


@functools.cache
def static_text(name: str) -> str:
    """templates/<name>.metal, without its leading and trailing blank lines."""
    return (TEMPLATE_DIR / f"{name}.metal").read_text().strip("\n")


def render(template: str, **kw: Any) -> str:
    """A whole template (kernel.metal.j2)."""
    return _environment().get_template(template).render(**kw)
