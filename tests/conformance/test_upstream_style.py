"""The CI fast subset of upstream-style conformance cases: an index.

The cases live in one module per family, each written for this project in the style of
Triton's own `test_core.py` / `test_standard.py` / `test_tuple.py` / `test_launch.py` (never
copied), with references computed independently in numpy/torch to the IR's semantics:

- `test_upstream_style_elementwise.py`: binary ops over dtype pairs, `//` `%` with negatives,
  bitwise and shifts, compares with NaN, unary and math ops, min/max/clamp with NaN, where,
  umulhi, fma, casts and bitcasts, libdevice.
- `test_upstream_style_reduce_scan.py`: 1-D/2-D reductions, argmin/argmax ties, generic
  tuple reductions, cumsum/cumprod/associative_scan, sort, topk, flip, histogram.
- `test_upstream_style_memory.py`: masked loads with `other=`, cache modifiers and eviction
  policies, odd sizes, strides and views, scalar and constant stores, pointer arithmetic.
- `test_upstream_style_shape.py`: broadcast, expand_dims, reshape, trans, permute, join,
  split, interleave, cat, ravel, swizzle2d, arange/full/cdiv.
- `test_upstream_style_control.py`: if/elif/else, returns, loops, while, static_range,
  tl.range, inline and noinline calls.
- `test_upstream_style_atomics.py`: masked atomics under contention, returned old values,
  xchg, cas (spin lock and tensor form), signed zeros, 64-bit refusals.
- `test_upstream_style_tuple_launch.py`: 3-D grids, grid callables, num_warps, value
  specialisation, scalar argument types, None/default constexprs, tuple and namedtuple args.

The full upstream suite runs through `scripts/run_upstream_tests.py` (see DEVELOPERS.md).
"""

from __future__ import annotations

from pathlib import Path

FAMILIES = ("elementwise", "reduce_scan", "memory", "shape", "control", "atomics",
            "tuple_launch")


def test_every_family_module_exists() -> None:
    here = Path(__file__).parent
    for family in FAMILIES:
        assert (here / f"test_upstream_style_{family}.py").is_file(), family
