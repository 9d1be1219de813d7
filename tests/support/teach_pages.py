"""The example and tutorial kernels' captures (compiled once per test process)."""

from __future__ import annotations

import functools
from pathlib import Path

from msltrans import cli
from msltrans.cli.views import capture
from msltrans.teach.capture import Capture
from scripts.teaching_views import KERNELS, Kernel

ROOT = Path(__file__).resolve().parent.parent.parent
BY_NAME: dict[str, Kernel] = {k.name: k for k in KERNELS}


@functools.cache
def captured(name: str) -> Capture:
    args = cli.build_parser().parse_args(["dump", *BY_NAME[name].dump_args(ROOT)])
    return capture(args)
