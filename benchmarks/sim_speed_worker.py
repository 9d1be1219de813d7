"""One engine of benchmarks/sim_speed.py in its own process (Triton's interpreter cannot share
a process with the JIT path: TRITON_INTERPRET is read when kernels are defined).

Reads one JSON request per line on stdin ({"case": NAME, "threads": N or null, "batch": B,
"lanes": "lanes" or "fibers", as MSLTRANS_SIM_LANES; default: the environment's}),
runs the case B times back to back (default 1) and answers one JSON line: {"seconds": the
median wall time of those runs, "cpu": their median process CPU time} or {"error": text}.
The first request of a case builds its inputs (and compiles), runs once, and its answer is
marked "first". The result is checked after every request, before the answer.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import traceback
import warnings

warnings.filterwarnings("ignore")
INITIAL_LANES = os.environ.get("MSLTRANS_SIM_LANES")


def main() -> None:
    from benchmarks.sim_speed_cases import CASES

    built: dict[str, tuple] = {}
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        name = request["case"]
        threads = request.get("threads")
        if threads:
            os.environ["MSLTRANS_SIM_THREADS"] = str(threads)
        else:
            os.environ.pop("MSLTRANS_SIM_THREADS", None)
        lanes = request.get("lanes", INITIAL_LANES)
        if lanes:
            os.environ["MSLTRANS_SIM_LANES"] = lanes
        else:
            os.environ.pop("MSLTRANS_SIM_LANES", None)
        try:
            first = name not in built
            if first:
                built[name] = CASES[name][1]()
            run, check = built[name]
            walls, cpus = [], []
            for _ in range(1 if first else max(1, int(request.get("batch", 1)))):
                start, start_cpu = time.perf_counter(), time.process_time()
                run()
                walls.append(time.perf_counter() - start)
                cpus.append(time.process_time() - start_cpu)
            check()
            answer = {"seconds": statistics.median(walls), "cpu": statistics.median(cpus),
                      "first": first}
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which prints it
            answer = {"error": f"{type(exc).__name__}: {exc}",
                      "trace": traceback.format_exc(limit=4)}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
