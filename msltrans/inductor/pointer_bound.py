"""Keep every kernel Inductor generates within `DIRECT_POINTER_SLOTS` pointer arguments.

msltrans binds each pointer argument of a kernel to its own slot of Metal's buffer argument
table (31 slots), after which come its scalar struct and, where a kernel prints or asserts,
its debug buffer (`msltrans.abi.limits.DIRECT_POINTER_SLOTS`: 29 pointers always fit). Inductor
bounds its kernels only by its own limits (250 arguments), so the route sets them to
`KERNEL_BUFFERS`, `DIRECT_POINTER_SLOTS` less a scratch pointer (`LIMITS`, applied by
`msltrans.inductor.route`):

- `max_fusion_unique_io_buffers`: the scheduler fuses two nodes only while the fused kernel
  reads and writes at most that many distinct buffers (vertical, horizontal, epilogue and
  the sub-kernels of a foreach kernel all pass `InductorChoices.can_fuse`);
- `combo_kernel_max_num_args`: a foreach or combo kernel takes sub-kernels only while their
  reads plus writes stay within it (the optimizers' `_foreach_*` steps are combo kernels).

Both count buffers, not pointers: a buffer that a kernel mutates is one pointer but a read
and a write, so they err on the side of fewer arguments. Neither splits ONE node: Inductor
inlines each op's unrealized pointwise inputs into it, so one node may read every buffer its
inputs read (a ternary op over three 12-read expressions reads 36). `split_wide_node`, which
the route installs around `GraphLowering.run_node`, realizes (writes to a buffer) the widest
unrealized inputs of an op before it is lowered, until the buffers its inputs read leave
room for its outputs within `KERNEL_BUFFERS`. An op that reads more distinct buffers than
that by itself (no input left to realize) is refused with `MetalNonRecoverableError` naming
the bound.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from msltrans.abi.limits import DIRECT_POINTER_SLOTS
from msltrans.errors import MetalNonRecoverableError

# Buffers a kernel's reads and writes may name: DIRECT_POINTER_SLOTS less one pointer for the
# scratch buffer (`ws_ptr`, an Inductor WorkspaceArg) that a mix-order or cooperative
# reduction or a split scan adds and no read/write count includes.
KERNEL_BUFFERS = DIRECT_POINTER_SLOTS - 1

# Inductor settings that bound a kernel's buffers (torch._inductor.config attributes).
LIMITS: dict[str, int] = {
    "max_fusion_unique_io_buffers": KERNEL_BUFFERS,
    "combo_kernel_max_num_args": KERNEL_BUFFERS,
}

_saved: dict[str, Any] = {}


def _tensors(value: Any) -> Iterator[Any]:
    """The IR values (TensorBox, views, buffers) in an environment entry, lists flattened."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif hasattr(value, "get_read_names"):
        yield value


def _unrealized(value: Any) -> Any:
    """The StorageBox holding unrealized pointwise/reduction IR behind `value`, or None."""
    from torch._inductor import ir

    while isinstance(value, (ir.TensorBox, ir.BaseView)):
        value = value.data
    if isinstance(value, ir.StorageBox) and isinstance(value.data, ir.Loops):
        return value
    return None


def buffers_read(value: Any) -> frozenset[str]:
    """Names of the buffers a kernel that loads `value` reads: those its unrealized IR
    reads, or the one buffer holding it."""
    box = _unrealized(value)
    if box is not None:
        return frozenset(box.data.get_read_names())
    try:
        return frozenset([value.get_name()])
    except (AttributeError, NotImplementedError):
        pass
    try:
        return frozenset(value.get_read_names())
    except (AttributeError, NotImplementedError):
        return frozenset()


def _groups(node: Any, env: dict[Any, Any]) -> list[list[Any]]:
    """Inputs that one kernel of `node` may read together. A `_foreach_*` op computes its
    i-th output from the i-th tensor of each list argument (plus its other arguments): one
    group per position; any other op: one group of all its tensor inputs."""
    name = getattr(node.target, "__name__", "")
    if name.startswith("_foreach_"):
        lists = [env[a] for a in _fx_args(node) if isinstance(env.get(a), (list, tuple))]
        shared = [v for a in _fx_args(node) if not isinstance(env.get(a), (list, tuple))
                  for v in _tensors(env.get(a))]
        width = max((len(values) for values in lists), default=0)
        return [[*(t for values in lists if i < len(values) for t in _tensors(values[i])),
                 *shared] for i in range(width)]
    return [[t for a in node.all_input_nodes for t in _tensors(env.get(a))]]


def _fx_args(node: Any) -> list[Any]:
    """The FX nodes among `node`'s arguments, each list argument as one entry."""
    import torch.fx

    out = []
    for arg in [*node.args, *node.kwargs.values()]:
        if isinstance(arg, torch.fx.Node):
            out.append(arg)
        elif isinstance(arg, (list, tuple)):
            out.extend(a for a in arg if isinstance(a, torch.fx.Node))
    return out


def _outputs(node: Any) -> int:
    val = node.meta.get("val")
    if isinstance(val, (list, tuple)):
        return max(1, sum(hasattr(v, "shape") for v in val))
    return 1


def _split(values: list[Any], budget: int, node: Any) -> None:
    """Realize the widest unrealized inputs until the union of their reads fits `budget`."""
    while True:
        reads = [(buffers_read(v), v) for v in values]
        union = frozenset().union(*(r for r, _ in reads))
        if len(union) <= budget:
            return
        wide = [(len(r), i) for i, (r, v) in enumerate(reads)
                if _unrealized(v) is not None and len(r) > 1]
        if not wide:
            raise MetalNonRecoverableError(
                f"torch.compile: `{node.format_node()}` reads {len(union)} distinct buffers "
                f"in one kernel; the msltrans route holds a kernel to {budget} buffers besides "
                f"its outputs ({KERNEL_BUFFERS} in all: DIRECT_POINTER_SLOTS="
                f"{DIRECT_POINTER_SLOTS}, Metal's 31-slot buffer table less the scalar struct "
                f"and the debug buffer, less a scratch pointer)",
                hint="split the op into several ops over fewer tensors each")
        _, index = max(wide)
        values[index].realize()
        if _unrealized(values[index]) is not None:  # Inductor left it inline: stop here
            raise MetalNonRecoverableError(
                f"torch.compile: an input of `{node.format_node()}` could not be realized to "
                f"keep the kernel within {KERNEL_BUFFERS} buffers")


# Set on the installed wrapper: tests and a second install() recognise it.
MARK = "__msltrans_pointer_bound__"


def split_wide_node(run_node: Callable[..., Any]) -> Callable[..., Any]:
    """`GraphLowering.run_node` that first realizes inputs an op would inline past the bound."""

    @functools.wraps(run_node)
    def run(self: Any, n: Any) -> Any:
        if n.op == "call_function":
            budget = KERNEL_BUFFERS - _outputs(n)
            for values in _groups(n, self.env):
                _split(values, budget, n)
        return run_node(self, n)

    setattr(run, MARK, True)
    return run


def install() -> None:
    """Wrap `GraphLowering.run_node` (undone by `uninstall()`)."""
    from torch._inductor.graph import GraphLowering

    if "run_node" in _saved:
        return
    _saved["run_node"] = GraphLowering.__dict__["run_node"]
    GraphLowering.run_node = split_wide_node(_saved["run_node"])  # type: ignore[method-assign]


def uninstall() -> None:
    from torch._inductor.graph import GraphLowering

    if "run_node" in _saved:
        GraphLowering.run_node = _saved.pop("run_node")  # type: ignore[method-assign]
