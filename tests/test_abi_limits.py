"""The simulator's C runtime repeats two of Metal's limits as macros: they must equal the
one Python definition (msltrans/abi/limits.py) that the lowering and the launcher use."""

from __future__ import annotations

import re
from pathlib import Path

from msltrans.abi import limits

HEADER = Path(__file__).resolve().parents[1] / "msltrans" / "sim" / "runtime" / "mslsim.h"


def _macro(name: str) -> int:
    m = re.search(rf"^#define {name} (\d+)u?$", HEADER.read_text(), re.M)
    assert m is not None, f"{name} is not defined in {HEADER.name}"
    return int(m.group(1))


def test_simulator_limits_match_abi() -> None:
    assert _macro("MSL_SIM_MAX_THREADS") == limits.MAX_THREADS_PER_THREADGROUP
    assert _macro("MSL_SIM_TG_LIMIT") == limits.THREADGROUP_MEMORY_BYTES
