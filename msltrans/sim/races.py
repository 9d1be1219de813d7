"""Race check: run a kernel under several thread orders on copies of its arguments and
compare every output. Threads run one at a time in the simulator, so a missing barrier or a
data race shows up as a result that depends on the order."""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from msltrans.sim.errors import RaceError
from msltrans.sim.library import Kernel
from msltrans.sim.source_map import writer_lines


@dataclass
class RaceReport:
    """What a clean check ran: the kernel and the schedules whose outputs all agreed."""

    kernel: str
    schedules: list[str]


def _clone(value: Any) -> Any:
    if isinstance(value, (list, tuple)) and value and not isinstance(value[0], (int, float)):
        return [_clone(v) for v in value]  # an argument buffer's tensors
    if isinstance(value, np.ndarray):
        return value.copy()
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(value, torch.Tensor):
            # Keep the storage layout (offset, strides): the kernel sees storage bytes.
            storage = value.untyped_storage()
            fresh = torch.empty(0, dtype=value.dtype)
            fresh.set_(storage.clone(), value.storage_offset(), value.size(), value.stride())
            return fresh
    return copy.deepcopy(value)


def _bytes_of(value: Any) -> np.ndarray | None:
    if isinstance(value, np.ndarray):
        return value.reshape(-1).view(np.uint8) if value.size else np.zeros(0, np.uint8)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return np.frombuffer(bytes(value.untyped_storage()), dtype=np.uint8)
    return None


def _pairs(base: list[Any], other: list[Any], names: dict[int, str]
           ) -> list[tuple[int, str, Any, Any]]:
    """(argument, name, first run's value, this run's value); an argument buffer's tensors
    (a list) each on their own, named `param[i]`."""
    out = []
    for index, (a, b) in enumerate(zip(base, other, strict=True)):
        name = names.get(index, "?")
        if isinstance(a, list):
            out.extend((index, f"{name}[{i}]", x, y)
                       for i, (x, y) in enumerate(zip(a, b, strict=True)))
        else:
            out.append((index, name, a, b))
    return out


def check_races(kernel: Kernel, *args: Any, seeds: tuple[int, ...] = (1, 2, 3),
                max_report: int = 8, **launch: Any) -> RaceReport:
    """Run `kernel` forward, reverse and shuffled (one run per seed) on copies of `args`.

    Raises RaceError naming each buffer whose bytes differ from the forward run, with the
    first differing element indices; returns a RaceReport when all runs agree. The caller's
    arguments are left untouched. `launch` takes the usual threads=/group_size=/... keywords.
    """
    launch.pop("schedule", None)
    launch.pop("seed", None)
    schedules = [("forward", 0), ("reverse", 0)] + [("shuffle", s) for s in seeds]
    results = []
    for schedule, seed in schedules:
        clones = [_clone(a) for a in args]
        kernel(*clones, schedule=schedule, seed=seed, **launch)
        results.append(clones)
    names = {p.index: p.name for p in kernel.signature.params if p.kind == "buffer"}
    differences = []
    for (schedule, seed), clones in zip(schedules[1:], results[1:], strict=True):
        label = schedule if schedule != "shuffle" else f"shuffle(seed={seed})"
        for index, name, base, other in _pairs(results[0], clones, names):
            a, b = _bytes_of(base), _bytes_of(other)
            if a is None or b is None or np.array_equal(a, b):
                continue
            itemsize = getattr(base, "itemsize", None) or base.element_size()
            a_items = a[: a.size // itemsize * itemsize].reshape(-1, itemsize)
            b_items = b[: b.size // itemsize * itemsize].reshape(-1, itemsize)
            elements = np.nonzero((a_items != b_items).any(axis=1))[0][:max_report].tolist()
            differences.append((index, name, label, elements))
    if differences:
        writers = [w for source in kernel.library.sources.values() for w in writer_lines(source)]
        raise RaceError(kernel.name, differences, writers)
    return RaceReport(kernel.name, [s if s != "shuffle" else f"shuffle({d})"
                                    for s, d in schedules])
