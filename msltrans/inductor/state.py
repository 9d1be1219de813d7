"""Whether the Inductor route is on: `MSLTRANS_INDUCTOR=1` in this process's environment.

The environment is the one switch that compile workers (subprocesses) inherit, so
`enable()` sets it and `disable()` clears it; this module must stay import-light (the
`torch.backends` entry point reads it on every `import torch`).
"""

from __future__ import annotations

from msltrans import settings

ENV = settings.INDUCTOR


def enabled() -> bool:
    return settings.text(ENV) == "1"
