"""The elementwise MSL support library (templates/elementwise_support.metal), pulled into a
kernel's program scope once, only when one of its helpers is used."""

from __future__ import annotations

import functools

from msltrans.lower.emitter import Emitter
from msltrans.lower.templates import TEMPLATE_DIR


@functools.lru_cache(maxsize=1)
def _text() -> str:
    return (TEMPLATE_DIR / "elementwise_support.metal").read_text().strip("\n")


def need_support(em: Emitter) -> None:
    if _text() not in em.prelude:
        em.prelude.append(_text())
