"""The Jinja environment over msltrans/templates (StrictUndefined: a missing name fails)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


@functools.lru_cache(maxsize=1)
def macros() -> Any:
    """The op-level macros (ops.metal.j2) as callables."""
    return environment().get_template("ops.metal.j2").module


def render(template: str, **kw: Any) -> str:
    return environment().get_template(template).render(**kw)
