"""One case run in this process: its outputs checked against the float64 reference, the
simulator's bytes and the accuracy the specification gives for the MSL its kernels emitted.

A case's row: name, group, notes, verdict ("pass", "fail", "refused", "skip", "error"; the
runner adds "crash" and "timeout"), seconds, outputs, `accuracy` (the approximate functions
the kernels reach, with their table and bound; the math mode), `properties` (what the case
measured: flushing, the MSL version, the matrix product's order, ...).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from msltrans import settings
from msltrans.errors import MetalNonRecoverableError
from msltrans.selftest import accuracy, compare
from msltrans.selftest.cases import Case, Output
from msltrans.selftest.context import Context, Skip

FAST_MATH_ENV = settings.FAST_MATH


def fast_math_env() -> bool:
    return settings.text(FAST_MATH_ENV).lower() in ("1", "true", "yes", "on")


def _finite(x: float) -> Any:
    return x if x != float("inf") else "inf"


def check_reference(out: Output, ctx: Context) -> dict[str, Any]:
    """Against the independent float64 / numpy reference (or the case's own check)."""
    if out.check is not None:
        return out.check(out.bits)
    if out.ref is None:
        return {"ok": True}
    if out.dtype in ("int32", "int16", "int8", "uint8", "int64", "uint64"):
        ok = bool(np.array_equal(np.asarray(out.bits).reshape(-1),
                                 np.asarray(out.ref).astype(out.bits.dtype).reshape(-1)))
        return {"ok": ok}
    got = ctx.values(out.bits, out.dtype)
    ref = np.asarray(out.ref, np.float64).reshape(-1)
    if out.tol is None:
        return {"ok": bool(np.array_equal(got, ref, equal_nan=True))}
    if out.tol[0] == "ulp":
        ulps = compare.ulps_from_reference(got, ref, out.dtype)
        return {"ok": ulps <= out.tol[1], "max_ulp": _finite(round(ulps, 3)),
                "ulp_bound": out.tol[1]}
    if out.tol[0] == "abs":
        ok, worst = compare.within_abs(got, ref, np.asarray(out.tol[1], np.float64).reshape(-1))
        return {"ok": ok, "worst_over_bound": _finite(round(worst, 4))}
    ok, worst = compare.within(got, ref, *out.tol)
    return {"ok": ok, "worst_over_bound": _finite(round(worst, 4)), "atol": out.tol[0],
            "rtol": out.tol[1]}


def check_simulator(out: Output, key: str, reference: dict[str, np.ndarray] | None,
                    exact: bool, ctx: Context) -> dict[str, Any]:
    """Against the simulator's bytes for the same inputs."""
    if reference is None or key not in reference:
        return {"ok": None, "why": "no simulator bytes for this case"}
    want = reference[key]
    if want.shape != out.bits.shape:
        return {"ok": False, "why": f"shape {out.bits.shape} != {want.shape}"}
    equal = bool(np.array_equal(out.bits, want))
    result: dict[str, Any] = {"bytes_equal": equal, "exact_claimed": exact}
    if out.dtype not in ("float32", "float16", "bfloat16"):
        result["ok"] = equal if exact else True
        return result
    ulp = compare.max_ulp(out.bits, want, out.dtype)
    result["max_ulp"] = _finite(ulp)
    if exact:
        result["ok"] = equal
    elif out.sim_abs is not None:
        ok, worst = compare.within_abs(ctx.values(out.bits, out.dtype),
                                       ctx.values(want, out.dtype),
                                       np.asarray(out.sim_abs, np.float64).reshape(-1))
        result.update(ok=ok, worst_over_bound=_finite(round(worst, 4)))
    else:
        result["ulp_bound"] = _finite(out.ulp)
        result["ok"] = ulp <= out.ulp
    return result


def claims(outputs: list[Output], sources: list[str], math_mode: str) -> tuple[
        dict[str, Any], list[str], dict[str, bool]]:
    """What the emitted MSL allows each output to claim: (the accuracy record, problems with
    the case's own claims, {output: exact})."""
    uses = [u for s in sources for u in accuracy.approximate(s)]
    merged: dict[str, accuracy.Use] = {}
    for u in uses:
        old = merged.get(u.call)
        merged[u.call] = accuracy.Use(u.call, u.bound, u.count + (old.count if old else 0))
    approx = sorted(merged.values(), key=lambda u: u.call)
    floor = max((u.bound.ulp if u.bound.ulp is not None else float("inf") for u in approx),
                default=0.0)
    record: dict[str, Any] = {"approximate": accuracy.describe(approx),
                              "math_mode": math_mode}
    problems: list[str] = []
    exact: dict[str, bool] = {}
    for out in outputs:
        if out.exact and approx:
            problems.append(f"{out.name} is claimed exact but its kernels emit "
                            f"{', '.join(u.call for u in approx)}")
        derived = not approx if out.exact is None else bool(out.exact) and not approx
        if (not derived and approx and out.sim_abs is None and out.check is None
                and out.ulp < floor):
            problems.append(f"{out.name}: a bound of {out.ulp:g} ulp against the simulator is "
                            f"below the specification's {floor:g} for what its kernels emit")
        exact[out.name] = derived and math_mode == "safe"
    if math_mode == "fast":
        record["void"] = ("fast math (PYTORCH_MPS_FAST_MATH) without `#pragma METAL fp "
                          "math_mode(safe)` in effect: no bit-exact claim holds (MSL 8.1)")
    return record, problems, exact


def run_case(case: Case, device: str, full: bool, reference: dict[str, np.ndarray] | None,
             timing: Callable[[], None] | None, engine: str = "sim") -> dict[str, Any]:
    from msltrans import msl_version

    row: dict[str, Any] = {"name": case.name, "group": case.group, "notes": case.notes}
    ctx = Context(case.name, device, full, engine)
    t0 = time.perf_counter()
    try:
        outputs = case.fn(ctx)
    except Skip as exc:
        row.update(verdict="skip", reason=str(exc), seconds=round(time.perf_counter() - t0, 3))
        return _with_properties(row, ctx)
    except MetalNonRecoverableError as exc:
        row.update(verdict="refused", reason=str(exc), seconds=round(time.perf_counter() - t0, 3))
        return _with_properties(row, ctx)
    except Exception as exc:  # a broken case is reported, the others still run
        row.update(verdict="error", reason=f"{type(exc).__name__}: {exc}",
                   traceback=traceback.format_exc(limit=6),
                   seconds=round(time.perf_counter() - t0, 3))
        return _with_properties(row, ctx)
    row["seconds"] = round(time.perf_counter() - t0, 3)
    mode = accuracy.math_mode(fast_math_env(), msl_version.target(), ctx.sources)
    record, problems, exact = claims(outputs, ctx.sources, mode)
    row["accuracy"] = record
    row["outputs"] = {}
    verdict = "pass"
    for out in outputs:
        key = f"{case.name}/{out.name}"
        vs_ref = check_reference(out, ctx)
        vs_sim = check_simulator(out, key, reference, exact[out.name], ctx)
        if mode == "fast":  # recorded only: fast math voids every claim (MSL 8.1, 8.4)
            vs_ref["ok_in_safe_mode"], vs_ref["ok"] = vs_ref.get("ok"), None
            vs_sim["ok"] = None
        row["outputs"][out.name] = {"dtype": out.dtype, "elements": int(out.bits.size),
                                    "vs_float64_reference": vs_ref, "vs_simulator": vs_sim}
        if vs_ref.get("ok") is False or vs_sim.get("ok") is False:
            verdict = "fail"
    if problems:
        row.update(verdict="error", reason="; ".join(problems))
    else:
        row["verdict"] = verdict
    if timing is not None and case.timing is not None:
        row["timing"] = time_case(case, device, timing, engine)
    return _with_properties(row, ctx)


def _with_properties(row: dict[str, Any], ctx: Context) -> dict[str, Any]:
    if ctx.properties:
        row["properties"] = ctx.properties
    return row


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


def time_case(case: Case, device: str, sync: Callable[[], None], engine: str = "sim"
              ) -> dict[str, Any]:
    try:
        assert case.timing is not None
        ours, theirs = case.timing(Context(case.name + "/timing", device, True, engine))
        a, b = _time(ours, sync), _time(theirs, sync)
        return {"msltrans_s": a, "torch_s": b, "torch_over_msltrans": round(b / a, 3)}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
