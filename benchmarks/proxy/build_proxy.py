"""Build everything the GPU proxy run needs, here (no GPU): MSL, CUDA, cubins, check data.

    python -m benchmarks.proxy.build_proxy --out build/proxy [--cases matmul softmax]

For every case of cases.py: msltrans compiles the Triton kernel with a real launch's
specialisation (the same MSL at the check and the time size, asserted), the simulator runs
it (and the hand-written reference) at the check size and records inputs and outputs, both
MSL sources are mapped to CUDA (msl_to_cuda.py) and built with nvcc for sm_90a, with and
without the MMA stand-in where the kernel has simdgroup matrices. `manifest.json` says what
run_gpu.py launches; the static facts (registers, stack, SASS mix) are printed and saved.
Then, on the lent H200 (see benchmarks/README.md):

    python -m benchmarks.proxy.run_gpu build/proxy
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.proxy import kernels
from benchmarks.proxy.cases import CASES, Case, Hand, Size, make_inputs
from benchmarks.proxy.cuda_build import build
from benchmarks.proxy.diagnostics import VARIANTS
from benchmarks.proxy.msl_to_cuda import map_msl
from benchmarks.proxy.specialise import Arg, compile_specialised

REFERENCE_DIR = Path(__file__).with_name("reference")
STANDIN = "MSL_PROXY_MMA_STANDIN"
SEED = 1234


def _program(case: Case, size: Size) -> Any:
    launch = size.launch
    args = {n: Arg(t, launch.args[n]) for n, t in launch.types.items()}
    return compile_specialised(getattr(kernels, case.kernel), args, launch.constexprs,
                               launch.num_warps)


def _hand_source(hand: Hand) -> str:
    defines = "".join(f"#define {k} {v}\n" for k, v in hand.defines.items())
    return defines + (REFERENCE_DIR / hand.file).read_text()


def _run_sim_program(program: Any, size: Size, data: dict[str, np.ndarray]) -> None:
    from msltrans import sim

    lib = sim.compile_shader(program.source)
    args = []
    for p in program.params:
        v = size.launch.args[p.name]
        args.append(data[v] if isinstance(v, str) else v)
    gx, gy, gz = size.launch.grid
    t = program.threads_per_group
    kernel = getattr(lib, program.kernel_name)
    kernel(*program.engine_args(args), threads=(gx * t, gy, gz), group_size=(t, 1, 1),
           arg_casts=program.arg_casts, buffer_alignment=program.sim_alignment)


def _run_sim_hand(hand: Hand, data: dict[str, np.ndarray]) -> None:
    from msltrans import sim

    lib = sim.compile_shader(_hand_source(hand), name=hand.file)
    args, casts = [], {}
    for i, a in enumerate(hand.args):
        if isinstance(a, str):
            args.append(data[a])
        elif a[0] == "i32":
            casts[i] = "int32"
            args.append(a[1])
        else:  # a Python float travels as fp32 (torch.mps's rule, kept by the simulator)
            assert a[0] == "fp32", a
            args.append(float(a[1]))
    gx, gy, gz = hand.grid
    # a Metal buffer starts 16-byte aligned (hand kernels cast to float4/uint4 from its
    # start): the simulator keeps that alignment where it places the buffer's end at a guard
    aligned = {i: 16 for i, a in enumerate(hand.args) if isinstance(a, str)}
    getattr(lib, hand.kernel)(*args, threads=(gx * hand.threads, gy, gz),
                              group_size=(hand.threads, 1, 1), arg_casts=casts,
                              buffer_alignment=aligned)


def _params(program: Any) -> list[dict[str, Any]]:
    return [{"name": p.name, "kind": p.kind, "type": p.triton_type} for p in program.params]


def _launch_args(program: Any, mapped: Any, case: Case) -> dict[str, Any]:
    """How run_gpu.py binds the mapped kernel: the pointer parameters (by Triton argument
    name, in buffer order) and the scalar-argument struct's bytes at each size, packed by
    msltrans's own launcher code (`MslProgram.engine_args`), so the GPU receives exactly the
    bytes Metal's `setBytes` would."""
    pointers = [p.name for p in program.params if p.kind == "pointer"]
    kinds = [p.pointer for p in mapped.params]
    want = [True] * len(pointers) + ([False] if program.args_size else [])
    if kinds != want:
        raise SystemExit(f"{case.name}: the mapped kernel takes {kinds} (pointer?) parameters, "
                         f"msltrans's program {want}")
    out: dict[str, Any] = {"buffers": pointers}
    if program.args_size:
        struct = {}
        for which, size in (("check", case.check), ("time", case.time)):
            values = [size.launch.args[p.name] for p in program.params]
            struct[which] = bytes(program.engine_args(values)[-1]).hex()
            if len(struct[which]) != 2 * program.args_size:
                raise SystemExit(f"{case.name}: the argument struct packs to "
                                 f"{len(struct[which]) // 2} bytes, not {program.args_size}")
        out["args_struct"] = struct
    return out


FAST_EXP2 = ("precise::exp2(", "fast::exp2(")


def build_case(case: Case, out: Path, index: int, fast_exp2: bool = False,
               diagnostics: bool = False) -> dict[str, Any]:
    tag = f"c{index}"
    program = _program(case, case.time)
    check_program = _program(case, case.check)
    if check_program.source != program.source:
        raise SystemExit(f"{case.name}: the check size compiles to different MSL than the time "
                         "size; pick check sizes with the same divisibility")
    (out / f"{tag}.metal").write_text(program.source)
    data = make_inputs(case.check, SEED)
    inputs = {k: v.copy() for k, v in data.items()}
    _run_sim_program(program, case.check, data)
    saved = {f"in_{k}": v for k, v in inputs.items()}
    saved.update({f"msl_{k}": data[k] for k in case.check.outputs})
    # msltrans's tt.dot paths, from the `// msltrans-dot:` lines (no simdgroup MMA on the
    # register path: no stand-in variant then, and the table says why)
    dots = re.findall(r"// msltrans-dot: path=(\w+)", program.source)
    entry: dict[str, Any] = {"name": case.name, "check": f"{tag}.npz", "variants": {},
                             "dot_paths": dots}
    has_mma = "simdgroup_multiply_accumulate" in program.source
    mapped = map_msl(program.source)
    # the stand-in's structure time is read against the hand kernel's: none, no stand-in
    for standin in ((False, True) if has_mma and case.check.hand is not None else (False,)):
        name = f"{tag}_msltrans" + ("_standin" if standin else "")
        b = build(mapped.cuda, name, out, (STANDIN,) if standin else ())
        entry["variants"]["msltrans" + (" (MMA stand-in)" if standin else "")] = {
            "cubin": b.cubin.name, "kernel": mapped.kernel, "threads": mapped.threads,
            "params": _params(program), **_launch_args(program, mapped, case),
            "static": _static(b)}
    if fast_exp2:
        _add_fast_exp2(entry, program, case, out, tag)
    if diagnostics and has_mma:
        _add_diagnostics(entry, program, case, out, tag)
    hand = case.check.hand
    if hand is not None:
        hdata = {k: v.copy() for k, v in inputs.items()}
        _run_sim_hand(hand, hdata)
        saved.update({f"hand_{k}": hdata[k] for k in case.check.outputs})
        hsrc = _hand_source(case.time.hand)
        hmapped = map_msl(hsrc, threads=hand.threads)
        for standin in ((False, True) if "simdgroup_multiply_accumulate" in hsrc else (False,)):
            name = f"{tag}_hand" + ("_standin" if standin else "")
            b = build(hmapped.cuda, name, out, (STANDIN,) if standin else ())
            entry["variants"]["hand MSL" + (" (MMA stand-in)" if standin else "")] = {
                "cubin": b.cubin.name, "kernel": hmapped.kernel, "threads": hand.threads,
                "static": _static(b)}
    np.savez_compressed(out / f"{tag}.npz", **saved)
    return entry


def _add_fast_exp2(entry: dict[str, Any], program: Any, case: Case, out: Path, tag: str
                   ) -> None:
    """A variant of msltrans's MSL with `fast::exp2` for `precise::exp2` (MSL Table 8.2's
    bound; CUDA's ex2.approx in the mapping): the measured side of the decision on
    attention's exp2 of arguments that are <= 0 by construction."""
    if FAST_EXP2[0] not in program.source:
        return
    fast = map_msl(program.source.replace(*FAST_EXP2))
    b = build(fast.cuda, f"{tag}_msltrans_fast_exp2", out, ())
    entry["variants"]["msltrans (fast::exp2)"] = {
        "cubin": b.cubin.name, "kernel": fast.kernel, "threads": fast.threads,
        "params": _params(program), **_launch_args(program, fast, case), "static": _static(b)}


def _add_diagnostics(entry: dict[str, Any], program: Any, case: Case, out: Path, tag: str
                     ) -> None:
    """diagnostics.py's variants of a kernel whose loops run simdgroup MMAs: timed only
    (`diag:` in the name), except `loads first`, which computes the same values and is
    checked against the simulator's bytes like msltrans's own build."""
    for name, edit in VARIANTS.items():
        src = edit(program.source)
        if src is None:
            continue
        mapped = map_msl(src)
        label = name if name == "loads first" else f"diag: {name}"
        b = build(mapped.cuda, f"{tag}_msltrans_{name.replace(' ', '_')}", out, ())
        entry["variants"][f"msltrans ({label})"] = {
            "cubin": b.cubin.name, "kernel": mapped.kernel, "threads": mapped.threads,
            "params": _params(program), **_launch_args(program, mapped, case),
            "static": _static(b)}


def add_variants(out: Path, names: list[str], diagnostics: bool) -> None:
    """Add the fast::exp2 (or, with `diagnostics`, diagnostics.py's) variants to the cases of
    an existing build whose names contain one of `names` (no simulator run: the variants
    are timed, and checked against float64 and the simulator's bytes where they compute
    the same thing)."""
    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    for entry in manifest:
        case = CASES[entry["index"]]
        if "failed" in entry or not any(n in case.name for n in names):
            continue
        add = _add_diagnostics if diagnostics else _add_fast_exp2
        program = _program(case, case.time)
        if program.source != (out / f"c{entry['index']}.metal").read_text():
            raise SystemExit(f"{case.name}: this tree compiles other MSL than the build's")
        add(entry, program, case, out, f"c{entry['index']}")
        print(f"{case.name}: {'diagnostic' if diagnostics else 'fast::exp2'} variants added")
        path.write_text(json.dumps(manifest, indent=1))


def _static(b: Any) -> dict[str, Any]:
    return {"registers": b.registers, "stack": b.stack, "spills": b.spill_stores,
            "shared": b.shared, "sass": b.sass}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="build/proxy")
    ap.add_argument("--cases", nargs="*", help="substrings of case names (default: all)")
    ap.add_argument("--fast-exp2", action="store_true",
                    help="also build each kernel that calls precise::exp2 with fast::exp2")
    ap.add_argument("--add-fast-exp2", nargs="+", metavar="NAME",
                    help="only add the fast::exp2 variant to these cases of the build in --out")
    ap.add_argument("--diagnostics", action="store_true",
                    help="also build diagnostics.py's variants of kernels with MMA loops")
    ap.add_argument("--add-diagnostics", nargs="+", metavar="NAME",
                    help="only add diagnostics.py's variants to these cases of the build")
    a = ap.parse_args()
    out = Path(a.out)
    if a.add_fast_exp2:
        add_variants(out, a.add_fast_exp2, False)
        return 0
    if a.add_diagnostics:
        add_variants(out, a.add_diagnostics, True)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    manifest, failed = [], 0
    for i, case in enumerate(CASES):
        if a.cases and not any(s in case.name for s in a.cases):
            continue
        try:
            entry = build_case(case, out, i, a.fast_exp2, a.diagnostics)
        except Exception as exc:  # noqa: BLE001 - one broken case must not lose the others
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            print(f"{case.name:40s} FAILED {reason[:400]}")
            manifest.append({"name": case.name, "index": i, "failed": reason, "variants": {}})
            failed += 1
            continue
        entry["index"] = i
        manifest.append(entry)
        (out / "manifest.json").write_text(json.dumps(manifest, indent=1))  # after each case
        for variant, v in entry["variants"].items():
            s = v["static"]
            mix = " ".join(f"{k}={n}" for k, n in s["sass"].items() if n)
            print(f"{case.name:40s} {variant:26s} regs={s['registers']:3d} "
                  f"stack={s['stack']:3d} {mix}")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
