"""`enable()` / `disable()`: route Inductor's Triton kernels through msltrans.

What `enable()` changes, all undone by `disable()`:
- `MSLTRANS_INDUCTOR=1` in `os.environ` (compile workers inherit it: their `import torch`
  runs msltrans's `torch.backends` entry point, which enables the route there too);
- Triton's backend table gets `cpu` = (InductorMetalBackend, InductorCpuDriver), so
  `torch.utils._triton.has_triton()` becomes true for CPU tensors (its cache is cleared);
- Inductor's config: `cpu_backend = "triton"`, the PyTorch workarounds in `CONFIG`, and the
  bounds on a kernel's buffers (msltrans.inductor.pointer_bound, which also wraps
  `GraphLowering.run_node`);
- on a Mac with MPS, Inductor's `mps` device generates Triton instead of its Metal codegen
  (msltrans.inductor.mps_route).
Nothing is registered before `enable()`: msltrans ships no static `cpu` Triton entry point,
because its mere presence would make `has_triton()` true for every CPU user.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

from msltrans import settings
from msltrans.errors import MetalNonRecoverableError
from msltrans.inductor import pointer_bound, state

BACKEND_NAME = "cpu"  # the name Inductor looks up (triton_helpers.set_driver_to_cpu, has_triton)
BACKEND_PACKAGE = "msltrans.inductor.backend"

# Inductor settings while enabled (key: torch._inductor.config attribute, dotted for sub-configs).
CONFIG: dict[str, Any] = {
    "cpu_backend": "triton",
    # With CPU tensors and max_autotune, torch 2.13 generates the benchmark-fusion module with
    # bad indentation (an IndentationError at compile time); fusing epilogues without
    # benchmarking them is what Inductor does when this is off.
    "benchmark_epilogue_fusion": False,
    # torch 2.13's convolution Triton template cannot be benchmarked for CPU tensors (its
    # CPU call passes one argument more than the generated launcher takes: a TypeError during
    # lowering); convolutions stay aten kernels under max_autotune, matmul templates do not.
    "max_autotune_conv_backends": "ATEN",
    # torch 2.13 fuses a constant operand into a matmul template's prologue as
    # `tl.full([1], c).broadcast_to(<2-D shape>)`, which Triton 3.9's front end rejects
    # ("Cannot broadcast, rank mismatch") for every backend (an LSTM cell's zero state).
    "prologue_fusion": False,
    # Fused, foreach and combo kernels within the pointers Metal's table holds
    # (msltrans/inductor/pointer_bound.py).
    **pointer_bound.LIMITS,
}

_saved_config: dict[str, Any] = {}


def _foreign_cpu_backends() -> list[str]:
    """`cpu` Triton backends that are not msltrans's (triton-cpu registers one)."""
    found = [f"{ep.value} (entry point of {getattr(ep.dist, 'name', '?')})"
             for ep in importlib.metadata.entry_points(group="triton.backends")
             if ep.name == BACKEND_NAME and ep.value != BACKEND_PACKAGE]
    import triton.backends

    current = triton.backends.backends.get(BACKEND_NAME)
    if current is not None and not current.compiler.__module__.startswith(BACKEND_PACKAGE):
        found.append(f"{current.compiler.__module__} (registered at run time)")
    return found


def _backend() -> Any:
    from triton.backends import Backend

    from msltrans.inductor.backend import compiler, driver

    return Backend(compiler=compiler.InductorMetalBackend, driver=driver.InductorCpuDriver)


def _config_target(config: Any, key: str) -> tuple[Any, str]:
    *parents, name = key.split(".")
    for part in parents:
        config = getattr(config, part)
    return config, name


def _apply_config() -> None:
    import torch._inductor.config as config

    for key, value in CONFIG.items():
        owner, name = _config_target(config, key)
        _saved_config.setdefault(key, getattr(owner, name))
        setattr(owner, name, value)


def _restore_config() -> None:
    import torch._inductor.config as config

    for key, value in _saved_config.items():
        owner, name = _config_target(config, key)
        setattr(owner, name, value)
    _saved_config.clear()


def _clear_torch_caches() -> None:
    import torch.utils._triton

    torch.utils._triton.has_triton.cache_clear()


def _restart_compile_workers() -> None:
    """Workers started before a switch have the old environment: let Inductor start new ones."""
    import sys

    async_compile = sys.modules.get("torch._inductor.async_compile")
    if async_compile is not None:
        async_compile.shutdown_compile_workers()


def enable(from_environment: bool = False, compile_worker: bool = False) -> None:
    """Route Inductor's Triton kernels through msltrans (see the module docstring).
    `compile_worker`: this is one of Inductor's compile workers (msltrans.inductor.autoload),
    which only compiles: no `mps` registrations there."""
    import triton.backends

    foreign = _foreign_cpu_backends()
    if foreign:
        raise MetalNonRecoverableError(
            "another Triton backend named 'cpu' is installed: " + "; ".join(foreign) +
            ". Inductor finds CPU backends by that name, so msltrans cannot route "
            "torch.compile's CPU kernels while it is there",
            hint="uninstall triton-cpu (pip uninstall triton-cpu) or use it instead of "
                 "msltrans.inductor")
    was_enabled = state.enabled()
    settings.put(state.ENV, "1")
    triton.backends.backends[BACKEND_NAME] = _backend()
    _apply_config()
    pointer_bound.install()
    _clear_torch_caches()
    if not compile_worker:
        from msltrans.inductor import mps_route

        mps_route.enable()
    if not was_enabled and not from_environment:
        _restart_compile_workers()


def disable() -> None:
    """Undo `enable()`: Inductor generates its own CPU (and MPS) code again."""
    import triton.backends

    was_enabled = state.enabled()
    settings.put(state.ENV, None)
    current = triton.backends.backends.get(BACKEND_NAME)
    if current is not None and current.compiler.__module__.startswith(BACKEND_PACKAGE):
        del triton.backends.backends[BACKEND_NAME]
    _restore_config()
    pointer_bound.uninstall()
    _clear_torch_caches()
    from msltrans.inductor import mps_route

    mps_route.disable()
    if was_enabled:
        _restart_compile_workers()
