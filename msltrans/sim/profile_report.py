"""Turning a profile's raw sites into per-kernel, per-source-line counters, a roofline
estimate of the time on an Apple chip, and a text report (msltrans.sim.profiling)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msltrans.sim import profile_records as P

# Public figures: (name, DRAM bandwidth B/s, fp32 FLOP/s). Apple's announced GPU figures
# (M1 2.6 TFLOPS / 68.25 GB/s, M1 Pro 5.2 / 200, M1 Max 10.4 / 400, M2 3.6 / 100) and the
# M4 Max's 546 GB/s and 18.4 TFLOP/s (design/SPEED.md).
CHIPS: dict[str, tuple[str, float, float]] = {
    "apple-m1": ("Apple M1 (8-core GPU)", 68.25e9, 2.6e12),
    "apple-m1-pro": ("Apple M1 Pro (16-core GPU)", 200e9, 5.2e12),
    "apple-m1-max": ("Apple M1 Max (32-core GPU)", 400e9, 10.4e12),
    "apple-m2": ("Apple M2 (10-core GPU)", 100e9, 3.6e12),
    "apple-m4-max": ("Apple M4 Max (40-core GPU)", 546e9, 18.4e12),
}


def chip_figures(chip: str) -> tuple[str, float, float]:
    if chip not in CHIPS:
        raise ValueError(f"unknown chip {chip!r}; known: {', '.join(CHIPS)}")
    return CHIPS[chip]


@dataclass
class Counters:
    """What one source line (or a whole kernel) did. Instructions are simdgroup-wide."""

    global_loads: dict[int, int] = field(default_factory=dict)    # access width -> instructions
    global_stores: dict[int, int] = field(default_factory=dict)
    global_load_bytes: int = 0
    global_store_bytes: int = 0
    global_segments: int = 0      # 128-byte segments touched, summed over instructions
    tg_loads: dict[int, int] = field(default_factory=dict)
    tg_stores: dict[int, int] = field(default_factory=dict)
    tg_bytes: int = 0
    tg_wavefronts: int = 0        # bank cycles (1 per instruction without conflicts)
    barriers: int = 0             # threadgroup barriers (per threadgroup)
    simd_barriers: int = 0
    shuffles: int = 0
    reductions: int = 0
    simd_other: int = 0
    mma: int = 0                  # simdgroup 8x8x8 multiply-accumulates
    matrix_loads: int = 0
    matrix_stores: int = 0

    def add(self, site: P.Site) -> None:
        k, n = site.kind, site.instructions
        if k in (P.DEVICE_LOAD, P.DEVICE_STORE):
            widths = self.global_loads if k == P.DEVICE_LOAD else self.global_stores
            widths[site.width] = widths.get(site.width, 0) + n
            if k == P.DEVICE_LOAD:
                self.global_load_bytes += site.bytes
            else:
                self.global_store_bytes += site.bytes
            self.global_segments += site.segments
        elif k in (P.TG_LOAD, P.TG_STORE):
            widths = self.tg_loads if k == P.TG_LOAD else self.tg_stores
            widths[site.width] = widths.get(site.width, 0) + n
            self.tg_bytes += site.bytes
            self.tg_wavefronts += site.wavefronts
        else:
            name = {P.TG_BARRIER: "barriers", P.SIMD_BARRIER: "simd_barriers",
                    P.SIMD_SHUFFLE: "shuffles", P.SIMD_REDUCE: "reductions",
                    P.SIMD_OTHER: "simd_other", P.MMA: "mma", P.MATRIX_LOAD: "matrix_loads",
                    P.MATRIX_STORE: "matrix_stores"}[k]
            setattr(self, name, getattr(self, name) + n)

    def merge(self, other: Counters) -> None:
        for name, value in vars(other).items():
            if isinstance(value, dict):
                mine = getattr(self, name)
                for width, n in value.items():
                    mine[width] = mine.get(width, 0) + n
            else:
                setattr(self, name, getattr(self, name) + value)

    @property
    def global_instructions(self) -> int:
        return sum(self.global_loads.values()) + sum(self.global_stores.values())

    @property
    def tg_instructions(self) -> int:
        return sum(self.tg_loads.values()) + sum(self.tg_stores.values())

    @property
    def coalescing(self) -> float | None:
        """Bytes the lanes asked for / bytes of the 128-byte segments touched."""
        if not self.global_segments:
            return None
        return (self.global_load_bytes + self.global_store_bytes) / (
            self.global_segments * P.SEGMENT_BYTES)

    @property
    def bank_conflict_cycles(self) -> int:
        return self.tg_wavefronts - self.tg_instructions


@dataclass
class LineStats:
    key: str                      # "kernel.py:12" (Triton line), or "shader.metal:40"
    ops: list[str]
    msl_lines: list[int]
    counters: Counters


@dataclass
class KernelStats:
    name: str
    launches: int
    threadgroups: int
    threads: int
    total: Counters
    lines: dict[str, LineStats]
    read_bytes: int               # footprint: distinct 128-byte segments read, in bytes
    write_bytes: int

    def estimate(self, chip: str) -> dict[str, float]:
        """Roofline estimate (seconds): memory = footprint / bandwidth; compute = the
        simdgroup multiply-accumulates' flops / fp32 peak; the time is the larger."""
        _, bandwidth, flops = chip_figures(chip)
        memory = (self.read_bytes + self.write_bytes) / bandwidth
        traffic = self.total.global_segments * P.SEGMENT_BYTES / bandwidth
        compute = self.total.mma * P.MMA_FLOPS / flops
        return {"seconds": max(memory, compute), "memory_s": memory, "compute_s": compute,
                "no_reuse_memory_s": traffic}


_OP = re.compile(r"^\s*//\s+([\w.]+)  (\S+)\s*$")
_KERNEL = re.compile(r"\bkernel\s+void\s+(\w+)\s*\(")


def _op_lines(source: str) -> list[tuple[str, str] | None]:
    """For each MSL line (1-based index), the `// <op>  <file:line>` comment it is under."""
    out: list[tuple[str, str] | None] = [None]
    current = None
    for text in source.splitlines():
        match = _OP.match(text)
        if match:
            current = (match.group(1), match.group(2))
        elif _KERNEL.search(text):
            current = None
        out.append(current)
    return out


def _kernel_start(source: str, kernel: str) -> int:
    for number, text in enumerate(source.splitlines(), 1):
        match = _KERNEL.search(text)
        if match and match.group(1) == kernel:
            return number
    return 1


def _symbolizer() -> str | None:
    for name in ("llvm-symbolizer-19", "llvm-symbolizer-18", "llvm-symbolizer-17",
                 "llvm-symbolizer"):
        path = shutil.which(name)
        if path:
            return path
    return None


def symbolize(library: str, offsets: Iterable[int]) -> dict[int, list[tuple[str, int]]]:
    """Return address -> inlined frames (file, line), innermost first, of the call before
    it (the address is symbolized minus one), for code in `library`."""
    tool = _symbolizer()
    wanted = sorted({o for o in offsets if o})
    if tool is None or not wanted:
        return {}
    text = "\n".join(hex(o - 1) for o in wanted) + "\n"
    result = subprocess.run([tool, f"--obj={library}", "--inlining", "--output-style=JSON"],
                            input=text, capture_output=True, text=True, timeout=120)
    frames: dict[int, list[tuple[str, int]]] = {}
    for offset, line in zip(wanted, result.stdout.splitlines(), strict=False):
        entry = json.loads(line)
        frames[offset] = [(Path(f.get("FileName", "")).name, int(f.get("Line", 0)))
                          for f in entry.get("Symbol", []) if f.get("Line")]
    return frames


def _line_of(site: P.Site, frames: dict[int, list[tuple[str, int]]], msl: str,
             start: int) -> int | None:
    """The MSL line a site belongs to: the first frame (innermost out) in the kernel's body,
    first of the site itself, then of the function it is in; else its innermost MSL line."""
    chains = [frames.get(pc, []) for pc in site.pc]
    for chain in chains:
        for file, line in chain:
            if file == msl and line >= start:
                return line
    for chain in chains:
        for file, line in chain:
            if file == msl:
                return line
    return None


def kernel_stats(launches: list[P.LaunchProfile]) -> dict[str, KernelStats]:
    out: dict[str, KernelStats] = {}
    symbols: dict[str, dict[int, list[tuple[str, int]]]] = {}
    for launch in launches:
        lib = launch.library
        msl, source = next(iter(lib.sources.items()))
        path = str(lib.path)
        if path not in symbols:
            pcs = {pc for other in launches if str(other.library.path) == path
                   for s in other.sites for pc in s.pc}
            symbols[path] = symbolize(path, pcs)
        ops, start = _op_lines(source), _kernel_start(source, launch.kernel)
        groups = 1
        for t, g in zip(launch.threads, launch.group_size, strict=True):
            groups *= -(-t // g)
        stats = out.get(launch.kernel)
        if stats is None:
            stats = out[launch.kernel] = KernelStats(launch.kernel, 0, 0, 0, Counters(), {},
                                                     0, 0)
        stats.launches += 1
        stats.threadgroups += groups
        stats.threads += launch.threads[0] * launch.threads[1] * launch.threads[2]
        stats.read_bytes += launch.read_bytes
        stats.write_bytes += launch.write_bytes
        for site in launch.sites:
            line = _line_of(site, symbols[path], msl, start)
            op = ops[line] if line is not None and line < len(ops) else None
            if op is not None and op[1] != "<unknown>":
                key, name = op[1], op[0]
            elif line is not None:
                key, name = f"{msl}:{line}", op[0] if op else ""
            else:
                key, name = "(runtime / no source line)", ""
            row = stats.lines.get(key)
            if row is None:
                row = stats.lines[key] = LineStats(key, [], [], Counters())
            if name and name not in row.ops:
                row.ops.append(name)
            if line is not None and line not in row.msl_lines:
                row.msl_lines.append(line)
            row.counters.add(site)
            stats.total.add(site)
    for stats in out.values():
        stats.lines = dict(sorted(stats.lines.items(), key=lambda kv: _sort_key(kv[0])))
    return out


def _sort_key(key: str) -> tuple[str, int]:
    file, _, line = key.rpartition(":")
    return (file, int(line)) if line.isdigit() else ("~", 0)


def source_text(key: str) -> str:
    """The Triton source line a row key names, when this process has read that file
    (Triton's JIT reads kernels' files through linecache); else ''."""
    import linecache
    import sys

    file, _, line = key.rpartition(":")
    if not line.isdigit():
        return ""
    paths = [p for p in list(linecache.cache) if Path(p).name == file]
    paths += [m.__file__ for m in list(sys.modules.values())
              if getattr(m, "__file__", None) and Path(m.__file__).name == file]
    for path in paths:
        text = linecache.getline(path, int(line)).strip()
        if text:
            return text
    return ""


def _widths(widths: dict[int, int]) -> str:
    return " ".join(f"{n}x{w}B" for w, n in sorted(widths.items())) or "-"


def _seconds(s: float) -> str:
    return f"{s * 1e6:.2f} us" if s < 1e-3 else f"{s * 1e3:.3f} ms"


def format_report(kernels: dict[str, KernelStats], chip: str) -> str:
    name, bandwidth, flops = chip_figures(chip)
    out = []
    for stats in kernels.values():
        t = stats.total
        est = stats.estimate(chip)
        eff = t.coalescing
        out.append(f"kernel `{stats.name}`: {stats.launches} launch(es), {stats.threadgroups} "
                   f"threadgroup(s), {stats.threads} thread(s)")
        out.append(f"  global loads  {_widths(t.global_loads)} ({t.global_load_bytes} B); "
                   f"stores {_widths(t.global_stores)} ({t.global_store_bytes} B)")
        out.append(f"  coalescing: {t.global_segments} segments of {P.SEGMENT_BYTES} B for "
                   f"{t.global_instructions} instructions"
                   + (f", {eff:.0%} of the bytes moved were asked for" if eff is not None else ""))
        out.append(f"  footprint: {stats.read_bytes} B read, {stats.write_bytes} B written "
                   f"(distinct {P.SEGMENT_BYTES}-byte segments)")
        out.append(f"  threadgroup memory: loads {_widths(t.tg_loads)}, stores "
                   f"{_widths(t.tg_stores)}; bank conflicts: {t.bank_conflict_cycles} extra "
                   f"cycle(s) ({P.BANKS} banks x {P.BANK_BYTES} B)")
        out.append(f"  barriers {t.barriers}, simdgroup barriers {t.simd_barriers}, SIMD "
                   f"shuffles {t.shuffles}, reductions {t.reductions}, other SIMD "
                   f"{t.simd_other}, simdgroup MMAs {t.mma} (loads {t.matrix_loads}, stores "
                   f"{t.matrix_stores})")
        out.append(f"  ESTIMATE on {name} ({bandwidth / 1e9:g} GB/s, {flops / 1e12:g} TFLOP/s "
                   f"fp32): {_seconds(est['seconds'])} (roofline: memory "
                   f"{_seconds(est['memory_s'])}, simdgroup-MMA compute "
                   f"{_seconds(est['compute_s'])}; without cache reuse "
                   f"{_seconds(est['no_reuse_memory_s'])}; scalar ALU work, latency and "
                   "occupancy are not modelled)")
        out.append(f"  {'line':<28} {'global ld':>14} {'global st':>14} {'coal.':>6} "
                   f"{'tg ld/st':>9} {'bank+':>6} {'bar':>5} {'shfl':>6} {'red':>5} "
                   f"{'mma':>6}  {'ops':<18} source")
        for row in stats.lines.values():
            c = row.counters
            coal = f"{c.coalescing:.0%}" if c.coalescing is not None else "-"
            out.append(f"  {row.key:<28} {_widths(c.global_loads):>14} "
                       f"{_widths(c.global_stores):>14} {coal:>6} {c.tg_instructions:>9} "
                       f"{c.bank_conflict_cycles:>6} {c.barriers:>5} {c.shuffles:>6} "
                       f"{c.reductions:>5} {c.mma:>6}  {', '.join(row.ops):<18} "
                       f"{source_text(row.key)[:60]}".rstrip())
        out.append("")
    return "\n".join(out)


def _counters_dict(c: Counters) -> dict[str, Any]:
    data = {k: ({str(w): n for w, n in v.items()} if isinstance(v, dict) else v)
            for k, v in vars(c).items()}
    data["coalescing"] = c.coalescing
    data["bank_conflict_cycles"] = c.bank_conflict_cycles
    return data


def as_dict(kernels: dict[str, KernelStats], chip: str) -> dict[str, Any]:
    return {name: {"launches": s.launches, "threadgroups": s.threadgroups,
                   "threads": s.threads, "read_bytes": s.read_bytes,
                   "write_bytes": s.write_bytes, "total": _counters_dict(s.total),
                   "estimate": {"chip": chip, **s.estimate(chip)},
                   "lines": {k: {"ops": r.ops, "msl_lines": r.msl_lines, "source": source_text(k),
                                 **_counters_dict(r.counters)} for k, r in s.lines.items()}}
            for name, s in kernels.items()}
