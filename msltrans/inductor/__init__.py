"""torch.compile through msltrans: Inductor's Triton kernels on the simulator or on MPS.

    import msltrans.inductor
    msltrans.inductor.enable()          # or MSLTRANS_INDUCTOR=1 in the environment
    model = torch.compile(model)        # its Triton kernels now run through msltrans

On Linux, Inductor's kernels for CPU tensors run on msltrans's Metal simulator; on a Mac,
kernels for `mps` tensors run on the Apple GPU and those for CPU tensors on the simulator.
`disable()` undoes it. `launches()` says which Triton kernels ran through msltrans,
`kernel_buffers()` how many buffer slots each took.
This module imports nothing heavy: torch and triton load when a function is called.
"""

from __future__ import annotations

from msltrans.inductor.state import ENV, enabled


def enable() -> None:
    """Route Inductor's Triton kernels through msltrans (msltrans.inductor.route)."""
    from msltrans.inductor import route

    route.enable()


def disable() -> None:
    """Undo `enable()`."""
    from msltrans.inductor import route

    route.disable()


def is_enabled() -> bool:
    return enabled()


def launches() -> dict[str, int]:
    """Launches of torch.compile's Triton kernels through msltrans, per kernel name."""
    from msltrans.runtime import launch_count as _launches

    return _launches.launches()


def kernel_buffers() -> dict[str, tuple[int, int]]:
    """(pointer arguments, hidden buffers) of each kernel in `launches()`: the route keeps
    the pointers within `msltrans.abi.limits.DIRECT_POINTER_SLOTS`, so none travels in an
    argument buffer, which the MPS engine refuses (msltrans.inductor.pointer_bound)."""
    from msltrans.runtime import launch_count as _launches

    return _launches.kernel_buffers()


def reset_launches() -> None:
    from msltrans.runtime import launch_count as _launches

    _launches.reset_launches()


__all__ = ["ENV", "disable", "enable", "is_enabled", "kernel_buffers", "launches",
           "reset_launches"]
