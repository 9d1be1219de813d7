"""The `torch.backends` entry point: `MSLTRANS_INDUCTOR=1` enables the route at `import torch`.

torch calls every `torch.backends` entry point near the end of its own import (device
backend autoloading). Without `MSLTRANS_INDUCTOR=1` this does nothing and imports nothing
beyond this module; with it, it calls `msltrans.inductor.enable()`, in the user's process and
in Inductor's compile workers (which inherit the environment). A compile worker only turns
Triton source into MSL, so there the route also pins the simulator engine
(`MSLTRANS_ENGINE=sim`, inherited by the worker's own pool) and skips the `mps`
registrations: Metal is not fork-safe, and a worker must not touch it before it forks.
`TORCH_DEVICE_BACKEND_AUTOLOAD=0` turns torch's autoloading off, and with it this hook.
"""

from __future__ import annotations

import sys

from msltrans import settings
from msltrans.inductor import state

COMPILE_WORKER_MAIN = "torch._inductor.compile_worker"


def in_compile_worker() -> bool:
    """Is this process Inductor's compile-worker sidecar (`python -m <COMPILE_WORKER_MAIN>`)?
    Its forked or spawned pool processes inherit what the sidecar set up."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return bool(spec and str(spec.name).startswith(COMPILE_WORKER_MAIN))


def autoload() -> None:
    if not state.enabled():
        return
    from msltrans.inductor import route

    worker = in_compile_worker()
    if worker:
        settings.set_default(settings.ENGINE, "sim")
    route.enable(from_environment=True, compile_worker=worker)
