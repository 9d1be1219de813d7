"""Turning a runtime report into a Python exception that names the kernel, the thread, the
buffer, the byte offset and the source line (symbolized only when something went wrong)."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

from msltrans.sim import native
from msltrans.sim.args import Bound
from msltrans.sim.errors import (
    CoherenceError,
    DeviceError,
    DeviceFailure,
    DivergenceError,
    DivisionTrapError,
    InvalidAddressError,
    KernelTimeoutError,
    LaunchError,
    OutOfBoundsError,
    SimError,
    StackOverflowError,
    ThreadgroupMemoryError,
    Where,
)
from msltrans.sim.signatures import KernelSignature
from msltrans.sim.source_map import triton_lines_in


@functools.lru_cache(maxsize=1)
def _symbolizer() -> list[str] | None:
    for name in ("llvm-symbolizer-19", "llvm-symbolizer-18", "llvm-symbolizer-17",
                 "llvm-symbolizer"):
        path = shutil.which(name)
        if path:
            return [path, "--functions=short", "--demangle"]
    path = shutil.which("addr2line")
    return [path, "-f", "-C", "-e"] if path else None


def symbolize(library: str, offset: int) -> str | None:
    """'file:line:col (function)' of an offset in a shared object, if tools allow."""
    tool = _symbolizer()
    if tool is None or not library:
        return None
    if tool[-1] == "-e":
        argv = [*tool, library, hex(offset)]
    else:
        argv = [*tool, f"--obj={library}", hex(offset)]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    if len(lines) < 2 or lines[1].startswith("??"):
        return None
    location = lines[1]
    if location.endswith(":0"):
        location = location[:-2]
    if "/mslsim-" in location:
        # The build's temporary directory means nothing to the user: keep the file name.
        location = location.rsplit("/", 1)[1]
    return f"{location} (in {lines[0]})"


def _source_text(location: str | None, sources: dict[str, str]) -> str | None:
    if not location:
        return None
    head = location.split(" ", 1)[0]
    parts = head.split(":")
    if len(parts) < 2 or not parts[1].isdigit():
        return location
    name = Path(parts[0]).name
    line = int(parts[1])
    text = sources.get(name)
    if text is None:
        return location
    lines = text.splitlines()
    if 1 <= line <= len(lines):
        return f"{location}: `{lines[line - 1].strip()}`"
    return location


def _buffer_for(addr: int, bound: list[Bound], kernel: KernelSignature) -> tuple[Bound, str] | None:
    for item in bound:
        region = item.region
        if region is None or region.map_base.value is None:
            continue
        base = region.map_base.value
        if base <= addr < base + region.map_len.value:
            names = {p.index: p.name for p in kernel.params if p.kind == "buffer"}
            return item, names.get(item.index, "?")
    return None


def _entry_name(kernel: KernelSignature, index: int, entry: int,
                sources: dict[str, str]) -> str | None:
    """The member an argument buffer's `entry` fills: the `entry`-th pointer member of the
    struct the buffer's parameter refers to, read from the source (None if not plain)."""
    param = next((p for p in kernel.params if p.kind == "buffer" and p.index == index), None)
    head = re.search(r"(\w+)\s*[&*]\s*$", param.type_text) if param is not None else None
    if head is None:
        return None
    for text in sources.values():
        body = re.search(rf"\bstruct\s+{head.group(1)}\s*\{{(.*?)\}}\s*;", text, re.S)
        if body is not None:
            members = re.findall(r"\*\s*(\w+)\s*;", body.group(1))
            return members[entry] if entry < len(members) else None
    return None


def timeout_hint(seconds: float) -> str:
    return (f"the dispatch ran past its time limit of {seconds:g} s (an endless loop, or a "
            "spin-wait on another thread: simulated threads run one at a time until they reach "
            "a barrier); raise the limit with the timeout= keyword of the kernel call or "
            "MSLTRANS_SIM_TIMEOUT=<seconds> (0: no limit)")


def raise_report(report: native.Report, kernel: KernelSignature, bound: list[Bound],
                 library: str, sources: dict[str, str], timeout_s: float = 0.0) -> None:
    kind = report.kind
    message = report.message.decode(errors="replace")
    if kind == native.ERR_LAUNCH:
        raise LaunchError(f"kernel `{kernel.name}`: {message}")
    where = Where(kernel.name, tuple(report.group), tuple(report.local))  # type: ignore[arg-type]
    if kind in (native.ERR_SEGV, native.ERR_STACK, native.ERR_FPE, native.ERR_BUS,
                native.ERR_COHERENCE):
        obj = report.object_path.decode(errors="replace")
        if Path(obj).resolve() == Path(library).resolve():
            where.source_line = _source_text(symbolize(obj, report.pc_offset), sources)
        elif obj:
            where.source_line = f"{Path(obj).name}+{report.pc_offset:#x}"
    # The MSL locations named (the faulting line; the sites of a divergent barrier) → the
    # @triton.jit lines they were generated from.
    where.triton_lines = triton_lines_in(f"{where.source_line or ''} {message}", sources)
    if kind == native.ERR_SEGV:
        _raise_segv(report, kernel, bound, where, sources)
    if kind == native.ERR_COHERENCE:
        _raise_coherence(report, kernel, bound, where, library, sources)
    errors: dict[int, type[DeviceError]] = {
        native.ERR_STACK: StackOverflowError, native.ERR_FPE: DivisionTrapError,
        native.ERR_DIVERGENCE: DivergenceError, native.ERR_TG_MEMORY: ThreadgroupMemoryError,
        native.ERR_FAIL: DeviceFailure, native.ERR_BUS: InvalidAddressError,
        native.ERR_TIMEOUT: KernelTimeoutError}
    what = {native.ERR_STACK: "fiber stack overflow (448 KB per thread: deep recursion or "
                              "large local arrays)",
            native.ERR_FPE: "integer division trap (division by zero or INT_MIN / -1)",
            native.ERR_BUS: "bus error",
            native.ERR_TIMEOUT: timeout_hint(timeout_s)}.get(kind, message)
    if kind in errors:
        raise errors[kind](what, where)
    raise SimError(f"kernel `{kernel.name}`: unknown runtime error {kind}: {message}")


def _raise_segv(report: native.Report, kernel: KernelSignature, bound: list[Bound],
                where: Where, sources: dict[str, str]) -> None:
    addr = report.fault_addr
    access = {1: "write", 0: "read"}.get(report.is_write, "access")
    hit = _buffer_for(addr, bound, kernel)
    if hit is not None:
        item, name = hit
        offset = addr - item.device_addr
        element = f", element {offset // item.itemsize}" if item.itemsize > 1 else ""
        buffer = f"buffer {item.index} (`{name}`, {item.size} bytes)"
        if item.entry is not None:
            # A pointer read from an argument buffer: name the member it came from.
            member = _entry_name(kernel, item.index, item.entry, sources)
            buffer = (f"buffer {item.index} (`{name}`) address {item.entry} "
                      f"(`{member or '?'}`, {item.size} bytes)")
            name = member or name
        what = f"out-of-bounds {access} of {buffer} at byte offset {offset}{element}"
        raise OutOfBoundsError(what, where, item.index, name, offset,
                               None if report.is_write < 0 else bool(report.is_write))
    if addr < 65536:
        what = f"{access} through a null pointer (address {addr:#x})"
    else:
        what = (f"{access} of address {addr:#x}, which is in no buffer (threadgroup memory "
                "past 32 KB, a wild pointer, or a buffer index that was not bound)")
    raise InvalidAddressError(what, where)


def _raise_coherence(report: native.Report, kernel: KernelSignature, bound: list[Bound],
                     where: Where, library: str, sources: dict[str, str]) -> None:
    addr = report.fault_addr
    hit = _buffer_for(addr, bound, kernel)
    index, name, offset, buffer = None, None, None, f"address {addr:#x}"
    if hit is not None:
        item, name = hit
        index, offset = item.index, addr - item.device_addr
        element = f", element {offset // item.itemsize}" if item.itemsize > 1 else ""
        buffer = f"buffer {item.index} (`{name}`) at byte offset {offset}{element}"
    group = tuple(report.writer_group)
    local = tuple(report.writer_local)
    writer_line = None
    if report.writer_pc_offset:
        writer_line = _source_text(symbolize(library, report.writer_pc_offset), sources)
    stored = "wrote with an atomic" if report.writer_atomic else "stored"
    at = ""
    if writer_line:
        at = f" at {writer_line}"
        lines = triton_lines_in(writer_line, sources)
        if lines:
            at += f" (Triton source {', '.join(lines)})"
    what = (f"plain load from {buffer}, which threadgroup {group}, thread {local} {stored} "
            f"during this dispatch{at}: device memory is coherent only within a threadgroup "
            "(MSL 4.8 Memory Coherency), so on a GPU this load may return a stale value, "
            "whatever fences and atomics ordered the two; declare the buffer "
            "`coherent(device)` (MSL 3.2, macOS 15) or pass the value through atomics")
    raise CoherenceError(what, where, index, name, offset, group,  # type: ignore[arg-type]
                         local, writer_line, bool(report.writer_atomic))  # type: ignore[arg-type]
