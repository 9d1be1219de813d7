"""`msltrans selftest`: run the curated cases on this machine's engine and write a receipt.

On a Mac (MPS) every output is compared with the bytes the CPU simulator produced for the
same inputs (`reference.npz`, shipped with msltrans and kept current by CI): equal bytes where
the simulator claims exactness, else the largest ULP difference is recorded against the
case's bound. Every output is also checked against an independent float64/numpy reference.
On Linux the same command runs on the simulator, where both comparisons hold by construction
unless the code changed (CI runs it). Tutorial kernels are timed against torch's own MPS ops.
"""

from __future__ import annotations

import datetime as dt
import json
import platform
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from msltrans.errors import MetalNonRecoverableError
from msltrans.selftest import compare
from msltrans.selftest.cases import CASES, Case, Output
from msltrans.selftest.context import Context

REFERENCE = Path(__file__).with_name("reference.npz")
SCHEMA = 1


def _engine() -> tuple[str, str, Any]:
    """(engine name, torch device, driver) of the active Metal driver."""
    from triton.runtime.driver import driver

    from msltrans.backend.driver import MetalDriver

    active = driver.active
    if not isinstance(active, MetalDriver):
        raise MetalNonRecoverableError(
            f"the active Triton driver is {type(active).__name__}, not msltrans's",
            hint="set TRITON_DEFAULT_BACKEND=metal")
    return active.engine_name, active.engine.device_type, active


def _check_reference(out: Output, ctx: Context) -> dict[str, Any]:
    """Against the independent float64 / numpy reference."""
    if out.ref is None:
        return {"ok": True}
    if out.dtype in ("int32", "int16", "int8", "uint8"):
        ok = bool(np.array_equal(out.bits.astype(np.int64),
                                 np.asarray(out.ref).astype(np.int64).reshape(-1)))
        return {"ok": ok}
    got = ctx.values(out.bits, out.dtype)
    ref = np.asarray(out.ref, np.float64).reshape(-1)
    if out.tol is None:
        ok = bool(np.array_equal(got, ref, equal_nan=True))
        return {"ok": ok}
    if out.tol[0] == "ulp":
        ulps = compare.ulps_from_reference(got, ref, out.dtype)
        return {"ok": ulps <= out.tol[1], "max_ulp": round(ulps, 3), "ulp_bound": out.tol[1]}
    ok, worst = compare.within(got, ref, *out.tol)
    return {"ok": ok, "worst_over_bound": round(worst, 4), "atol": out.tol[0],
            "rtol": out.tol[1]}


def _check_simulator(out: Output, key: str, reference: dict[str, np.ndarray] | None
                     ) -> dict[str, Any]:
    """Against the simulator's bytes for the same inputs."""
    if reference is None or key not in reference:
        return {"ok": None, "why": "no simulator bytes for this case"}
    want = reference[key]
    if want.shape != out.bits.shape:
        return {"ok": False, "why": f"shape {out.bits.shape} != {want.shape}"}
    equal = bool(np.array_equal(out.bits, want))
    result: dict[str, Any] = {"bytes_equal": equal, "exact_claimed": out.exact}
    if out.dtype.startswith("float") and out.dtype in ("float32", "float16", "bfloat16"):
        ulp = compare.max_ulp(out.bits, want, out.dtype)
        result["max_ulp"] = ulp if ulp != float("inf") else "inf"
        result["ulp_bound"] = out.ulp if out.ulp != float("inf") else "none"
        result["ok"] = equal if out.exact else (ulp <= out.ulp)
    else:
        result["ok"] = equal
    return result


def _time(fn: Callable[[], Any], sync: Callable[[], None], repeat: int = 20) -> float:
    fn()
    sync()  # compile and warm up
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - t0)
    return float(np.median(samples))


def run_case(case: Case, device: str, full: bool, reference: dict[str, np.ndarray] | None,
             timing: Callable[[], None] | None) -> dict[str, Any]:
    row: dict[str, Any] = {"name": case.name, "group": case.group, "notes": case.notes}
    ctx = Context(case.name, device, full)
    t0 = time.perf_counter()
    try:
        outputs = case.fn(ctx)
    except MetalNonRecoverableError as exc:
        row.update(verdict="refused", reason=str(exc), seconds=round(time.perf_counter() - t0, 3))
        return row
    except Exception as exc:  # a broken case is reported, the others still run
        row.update(verdict="error", reason=f"{type(exc).__name__}: {exc}",
                   traceback=traceback.format_exc(limit=6),
                   seconds=round(time.perf_counter() - t0, 3))
        return row
    row["seconds"] = round(time.perf_counter() - t0, 3)
    row["outputs"] = {}
    verdict = "pass"
    for out in outputs:
        key = f"{case.name}/{out.name}"
        vs_ref = _check_reference(out, ctx)
        vs_sim = _check_simulator(out, key, reference)
        row["outputs"][out.name] = {"dtype": out.dtype, "elements": int(out.bits.size),
                                    "vs_float64_reference": vs_ref, "vs_simulator": vs_sim}
        if not vs_ref["ok"] or vs_sim.get("ok") is False:
            verdict = "fail"
    row["verdict"] = verdict
    if timing is not None and case.timing is not None:
        row["timing"] = _timing(case, device, timing)
    return row


def _timing(case: Case, device: str, sync: Callable[[], None]) -> dict[str, Any]:
    try:
        ours, theirs = case.timing(Context(case.name + "/timing", device, True))
        a, b = _time(ours, sync), _time(theirs, sync)
        return {"msltrans_s": a, "torch_s": b, "torch_over_msltrans": round(b / a, 3)}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def environment(engine: str) -> dict[str, Any]:
    import torch
    import triton

    import msltrans
    from msltrans import msl_version

    info: dict[str, Any] = {
        "engine": engine, "python": platform.python_version(), "torch": torch.__version__,
        "triton": triton.__version__, "msltrans": msltrans.__version__,
        "os": platform.platform(), "machine": platform.machine(),
        "macos": platform.mac_ver()[0] or None,
        "msl_version": msl_version.text(msl_version.target()),
    }
    if engine == "mps":
        info["chip"] = str(torch._C._mps_get_name())
        info["gpu_cores"] = int(torch._C._mps_get_core_count())
    else:
        info["chip"] = "CPU Metal simulator"
    return info


def run(full: bool = False, time_kernels: bool | None = None, only: list[str] | None = None,
        progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    engine, device, driver = _engine()
    reference = load_reference()
    time_kernels = engine == "mps" if time_kernels is None else time_kernels
    sync = driver.get_device_interface().synchronize if time_kernels else None
    rows = []
    cases = [c for c in CASES if (full or not c.full_only) and (not only or c.name in only)]
    for case in cases:
        row = run_case(case, device, full, reference, sync)
        rows.append(row)
        if progress:
            progress(f"{case.name:22s} {row['verdict']}")
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("pass", "fail", "refused",
                                                                "error")}
    return {"msltrans_selftest": SCHEMA,
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "set": "full" if full else "quick", "environment": environment(engine),
            "reference": "simulator bytes shipped with msltrans" if reference else None,
            "summary": counts, "cases": rows}


def load_reference() -> dict[str, np.ndarray] | None:
    return dict(np.load(REFERENCE)) if REFERENCE.exists() else None


def write_reference(path: Path = REFERENCE) -> dict[str, int]:
    """Run every case on the simulator and store its output bytes (a developer step; CI
    checks the stored bytes are current)."""
    engine, device, _ = _engine()
    if engine != "sim":
        raise MetalNonRecoverableError("the reference bytes come from the simulator",
                                       hint="run with MSLTRANS_ENGINE=sim")
    data: dict[str, np.ndarray] = {}
    for case in CASES:
        outputs = case.fn(Context(case.name, device, case.full_only))
        for out in outputs:
            data[f"{case.name}/{out.name}"] = out.bits
    np.savez_compressed(path, **data)
    return {k: int(v.nbytes) for k, v in data.items()}


def save(receipt: dict[str, Any], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(receipt, indent=1, default=str) + "\n", encoding="utf-8")
