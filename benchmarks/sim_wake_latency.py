"""Where and how late a woken worker thread starts on this machine: the measurement behind
the simulator's msl_sim_steer (docs/sim-execution.md, "Execution model").

    python3 benchmarks/sim_wake_latency.py

Builds benchmarks/sim_wake_latency.c with the simulator's clang and runs it after pauses of
20 ms, 0.3 s and 0.5 ms, with the woken thread free to run anywhere and steered off the
caller's CPU. On a virtual machine whose idle virtual CPUs count as preempted, a free
worker starts on the caller's CPU, late by up to a balancing tick; a steered one does not.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from msltrans.sim.compiler import find_compiler

SOURCE = Path(__file__).with_name("sim_wake_latency.c")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "wake"
        subprocess.run([*find_compiler().c_argv(), "-O2", "-pthread", str(SOURCE), "-o",
                        str(exe)], check=True)
        for pause in ("0.02", "0.3", "0.0005"):
            for mode in ("free", "steer"):
                out = subprocess.run([str(exe), pause, mode], capture_output=True, text=True,
                                     check=True)
                print(out.stdout.strip(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
