"""Who holds which element: a layout's ownership map, as arrays the pictures are drawn from.

Computed from the layout's basis vectors with numpy (all (register, lane, simdgroup) at once),
not through `LinearLayout.coord`, so the tests can hold the two against each other. Every
tensor is shown as a 2-D grid of its row-major elements: a 2-D tensor as itself, a 1-D one
wrapped into rows, a 3-D+ one with its leading dims stacked (`block_rows` apart).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from msltrans.layout import LinearLayout

WRAP_1D = 32  # a 1-D tensor is drawn in rows of this many elements (one simdgroup's lanes)


@dataclass(frozen=True)
class Ownership:
    layout: LinearLayout

    @property
    def shape(self) -> tuple[int, ...]:
        return self.layout.shape

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def threads_x_regs(self) -> int:
        return self.layout.num_regs * self.layout.num_lanes * self.layout.num_warps

    @cached_property
    def coords(self) -> np.ndarray:
        """[g, dim]: the coordinate held at g = r + R * (lane + L * warp)."""
        bases = list(self.layout.reg) + list(self.layout.lane) + list(self.layout.warp)
        g = np.arange(self.threads_x_regs, dtype=np.int64)
        out = np.zeros((g.size, len(self.shape)), dtype=np.int64)
        for bit, basis in enumerate(bases):
            on = (g >> bit) & 1
            out ^= on[:, None] * np.asarray(basis, dtype=np.int64)[None, :]
        return out

    @cached_property
    def flat(self) -> np.ndarray:
        """[g]: the row-major index of the element held at g."""
        idx = np.zeros(self.threads_x_regs, dtype=np.int64)
        for d, n in enumerate(self.shape):
            idx = idx * n + self.coords[:, d]
        return idx

    def split(self, g: np.ndarray | int) -> tuple:
        """g → (register, lane, simdgroup)."""
        R, L = self.layout.num_regs, self.layout.num_lanes
        return g % R, (g // R) % L, g // (R * L)

    @cached_property
    def copies(self) -> np.ndarray:
        """[element]: how many (register, lane, simdgroup) hold it (1 unless replicated)."""
        return np.bincount(self.flat, minlength=self.numel)

    @cached_property
    def owner(self) -> np.ndarray:
        """[element]: the g that owns it (the holder whose replica bits are zero, the one
        stores and scratch writes use; `LinearLayout.locate`), -1 if nobody holds it."""
        fr, fl, fw = self.layout.free_masks()
        r, lane, warp = self.split(np.arange(self.threads_x_regs, dtype=np.int64))
        is_owner = ((r & fr) == 0) & ((lane & fl) == 0) & ((warp & fw) == 0)
        out = np.full(self.numel, -1, dtype=np.int64)
        out[self.flat[is_owner]] = np.nonzero(is_owner)[0]
        return out

    @cached_property
    def _by_element(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(self.flat, kind="stable")
        return order, np.searchsorted(self.flat[order], np.arange(self.numel + 1))

    def holders(self, element: int) -> list[tuple[int, int, int]]:
        """Every (register, lane, simdgroup) holding a row-major element, owner first."""
        order, starts = self._by_element
        gs = sorted(order[starts[element]:starts[element + 1]].tolist(),
                    key=lambda g: (g != self.owner[element], g))
        return [tuple(int(x) for x in self.split(g)) for g in gs]

    # ---- the 2-D view ---------------------------------------------------------------------

    @property
    def grid(self) -> tuple[int, int]:
        """(rows, cols) of the drawn grid; element e sits at (e // cols, e % cols)."""
        if len(self.shape) == 0:
            return 1, 1
        if len(self.shape) == 1:
            cols = min(self.shape[0], WRAP_1D)
            return self.shape[0] // cols, cols
        return self.numel // self.shape[-1], self.shape[-1]

    @property
    def block_rows(self) -> int:
        """Rows per slice of the leading dims (3-D+), per wrapped row (1-D)."""
        return self.shape[-2] if len(self.shape) >= 3 else self.grid[0]

    def owner_grid(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per grid cell: the owner's (simdgroup, lane, register) and the number of copies."""
        rows, cols = self.grid
        r, lane, warp = self.split(self.owner)
        shape = (rows, cols)
        return (warp.reshape(shape), lane.reshape(shape), r.reshape(shape),
                self.copies.reshape(shape))

    def summary(self) -> str:
        L = self.layout
        reps = int(self.copies.max()) if self.numel else 0
        held = f"each element held by {reps} threads/registers" if reps > 1 \
            else "each element held once"
        return (f"tensor {'x'.join(map(str, self.shape)) or 'scalar'}: {L.num_regs} register(s) "
                f"x {L.num_lanes} lanes x {L.num_warps} simdgroup(s); {held}")

    def to_json(self) -> dict:
        """What the page's script needs to answer 'who holds this cell?' on hover."""
        rows, cols = self.grid
        return {"shape": list(self.shape), "rows": rows, "cols": cols,
                "reg": [list(b) for b in self.layout.reg],
                "lane": [list(b) for b in self.layout.lane],
                "warp": [list(b) for b in self.layout.warp],
                "free": list(self.layout.free_masks())}
