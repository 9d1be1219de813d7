"""A lowering choice that tests and benchmarks set for a block of code, so that the two
lowerings can be compared bit for bit (the direct-store epilogue, the loop schedule)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class Switch:
    """On or off; `set(value)` holds another value inside a `with` block (blocks nest)."""

    def __init__(self, default: bool) -> None:
        self._values = [default]

    def __bool__(self) -> bool:
        return self._values[-1]

    @contextmanager
    def set(self, value: bool) -> Iterator[None]:
        self._values.append(value)
        try:
            yield
        finally:
            self._values.pop()
