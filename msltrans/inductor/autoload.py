"""The `torch.backends` entry point: `MSLTRANS_INDUCTOR=1` enables the route at `import torch`.

torch calls every `torch.backends` entry point near the end of its own import (device
backend autoloading). Without `MSLTRANS_INDUCTOR=1` this does nothing and imports nothing
beyond this module; with it, it calls `msltrans.inductor.enable()`, in the user's process and
in Inductor's compile workers (which inherit the environment). `TORCH_DEVICE_BACKEND_AUTOLOAD=0`
turns torch's autoloading off, and with it this hook.
"""

from __future__ import annotations

from msltrans.inductor import state


def autoload() -> None:
    if not state.enabled():
        return
    from msltrans.inductor import route

    route.enable(from_environment=True)
