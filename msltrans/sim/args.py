"""Binding Python arguments to buffer slots the way torch.mps.compile_shader does.

Argument i binds buffer i. Tensors and arrays are copied into guarded staging mappings (the
end of each touches a PROT_NONE page, so an access past it faults) and copied back after the
run; arguments that share memory share one staging region, so aliasing behaves as on a GPU.
Python ints are sent as 8 bytes and floats as 4 (as torch does), unless `arg_casts` (a dtype
name for all scalars, or {index: name}) says otherwise; lists become arrays the same way.

A list of tensors is an argument buffer, as torch.mps takes it: buffer i holds one 8-byte GPU
address per tensor (torch sends `gpuAddress + storage offset` with setBytes). Here each tensor
is staged like any buffer (its own guarded mapping, an `entry` of argument i) and the address
of its staged copy is written into the guarded bytes of buffer i, so an access through such a
pointer past its tensor faults and is reported like any other.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from msltrans.abi.limits import GPU_ADDRESS_BYTES, SET_BYTES_LIMIT
from msltrans.sim.errors import LaunchError
from msltrans.sim.staging import staging_alignment

# torch.mps's cast names (OptionalArgCaster) -> numpy dtypes; bf16 is converted by hand.
CASTS: dict[str, Any] = {"fp16": np.float16, "bf16": "bf16", "int32": np.int32,
                         "int16": np.int16, "int8": np.int8, "uint8": np.uint8}


@dataclass
class Bound:
    """One argument's place in a staging region."""

    index: int
    host_addr: int | None     # memory to copy back into (None for scalars)
    size: int
    itemsize: int
    writable: bool
    region: Region | None = None
    device_addr: int = 0
    scalar: bytes | None = None
    align: int = 1  # alignment (bytes) the kernel assumes of this buffer's address
    entry: int | None = None  # a tensor of an argument buffer: its address's place there
    addresses: int = 0  # an argument buffer's bytes: how many GPU addresses it holds


@dataclass
class Region:
    host_start: int
    size: int
    copy_back: bool
    map_base: ctypes.c_void_p = field(default_factory=ctypes.c_void_p)
    map_len: ctypes.c_ulong = field(default_factory=ctypes.c_ulong)
    data: int = 0
    scalar_bytes: bytes | None = None
    align: int = 1  # the staging copy must start at host_start's phase modulo this
    slack: int = 0  # bytes mapped past the end to keep that alignment (see below)


def _bf16_bytes(values: np.ndarray) -> bytes:
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(values.astype(np.float32))
    rounded = np.where(nan, (bits >> 16) | 0x40, rounded)
    return rounded.astype(np.uint16).tobytes()


def scalar_bytes(value: Any, index: int, arg_casts: str | dict[int, str] | None) -> bytes:
    cast = arg_casts.get(index) if isinstance(arg_casts, dict) else arg_casts
    if isinstance(value, np.generic) and not isinstance(value, (np.float64, np.bool_)):
        if cast is None:
            return value.tobytes()    # an extension: numpy scalars keep their own width
        value = value.item()
    if isinstance(value, (list, tuple)):
        if not value:
            raise LaunchError(f"argument {index}: empty list/tuple cannot be a kernel argument")
        is_int = isinstance(value[0], (int, np.integer)) and not isinstance(value[0], bool)
        values = np.array(value, dtype=np.int64 if is_int else np.float32)
    elif isinstance(value, (bool, int, np.bool_)):
        values = np.array([int(value)], dtype=np.int64)
    elif isinstance(value, float):
        values = np.array([value], dtype=np.float32)
    else:
        raise LaunchError(f"argument {index}: unsupported type {type(value).__name__} (pass "
                          "a torch tensor, numpy array, int, float or list of numbers)")
    if cast is None:
        return values.tobytes()
    if cast not in CASTS:
        raise LaunchError(f"argument {index}: unsupported cast {cast!r}; torch.mps accepts "
                          f"{sorted(CASTS)}")
    if CASTS[cast] == "bf16":
        return _bf16_bytes(values)
    return values.astype(CASTS[cast]).tobytes()


def argument_buffer(value: Any, index: int) -> list[Bound] | None:
    """A list/tuple of tensors or arrays → its entries and its address bytes (the last item),
    or None if `value` is not such a list. Checks what Metal and torch.mps require: every
    element a tensor (torch casts the list to std::vector<Tensor>), and the addresses within
    setBytes's 4 KB."""
    if not isinstance(value, (list, tuple)) or not value or memory_of(value[0], index) is None:
        return None
    entries = []
    for entry, item in enumerate(value):
        memory = memory_of(item, index)
        if memory is None:
            raise LaunchError(f"argument {index}: element {entry} of a list of tensors is a "
                              f"{type(item).__name__}; an argument buffer holds tensors only")
        addr, size, itemsize, writable = memory
        entries.append(Bound(index, addr, size, itemsize, writable, entry=entry))
    nbytes = GPU_ADDRESS_BYTES * len(entries)
    if nbytes > SET_BYTES_LIMIT:
        raise LaunchError(f"argument {index}: {len(entries)} tensors are {nbytes} bytes of GPU "
                          f"addresses, over the {SET_BYTES_LIMIT}-byte setBytes limit")
    table = Bound(index, None, nbytes, GPU_ADDRESS_BYTES, False, scalar=bytes(nbytes),
                  addresses=len(entries))
    return [*entries, table]


def write_addresses(table: Bound, entries: list[Bound]) -> None:
    """Fill an argument buffer's staged bytes with its tensors' staged addresses."""
    assert table.region is not None
    data = table.region.data
    if data % GPU_ADDRESS_BYTES:
        raise LaunchError(f"argument {table.index}: the argument buffer's staging copy is not "
                          f"{GPU_ADDRESS_BYTES}-byte aligned")
    mine = [e for e in entries if e.index == table.index and e.entry is not None]
    for item in mine:
        ctypes.c_uint64.from_address(data + GPU_ADDRESS_BYTES * (item.entry or 0)).value = \
            item.device_addr


def memory_of(value: Any, index: int) -> tuple[int, int, int, bool] | None:
    """(address, bytes, itemsize, writable) of a tensor or array argument, else None."""
    if isinstance(value, np.ndarray):
        if not value.flags.c_contiguous:
            raise LaunchError(f"argument {index}: non-contiguous numpy array; pass "
                              "np.ascontiguousarray(x) or a torch tensor")
        return value.ctypes.data, value.nbytes, value.itemsize, bool(value.flags.writeable)
    # Not `import torch`: it takes seconds, and a tensor implies torch is already loaded.
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            raise LaunchError(f"argument {index}: tensor on {value.device}; the simulator "
                              "runs on CPU tensors")
        storage = value.untyped_storage()
        offset = value.storage_offset() * value.element_size()
        # As torch.mps binds it: the storage from the tensor's offset to its end.
        return (storage.data_ptr() + offset, storage.nbytes() - offset, value.element_size(),
                True)
    return None


def group_regions(bound: list[Bound]) -> list[Region]:
    """Merge overlapping host ranges into shared staging regions."""
    memory = sorted((b for b in bound if b.host_addr is not None),
                    key=lambda b: b.host_addr or 0)
    regions: list[Region] = []
    for item in memory:
        start = item.host_addr or 0
        last = regions[-1] if regions else None
        if last is not None and start < last.host_start + last.size:
            last.size = max(last.size, start + item.size - last.host_start)
            last.copy_back = last.copy_back or item.writable
        else:
            last = Region(start, item.size, item.writable)
            regions.append(last)
        item.region = last
        last.align = max(last.align, item.align)
    return regions


SLACK_BYTE = 0xA5


def alignment_slack(region: Region) -> int:
    """Bytes to map after a region so that its staging copy keeps the host address's phase
    modulo `region.align` (the alignment a kernel assumes: Triton specialises a pointer as
    16-byte aligned from the host address, and msltrans then issues 16-byte accesses). A
    staging copy whose end touches the guard page would start misaligned when the size is
    not a multiple of that. The slack is filled with SLACK_BYTE and checked after the run
    (`check_slack`): a write there is reported as out of bounds; a read there returns
    SLACK_BYTE bytes, unreported."""
    need = region.align
    if region.scalar_bytes is not None or not region.size or need <= 1:
        return 0
    if region.host_start % need == 0 and staging_alignment(region.size) >= need:
        return 0
    return (-region.size - region.host_start) % need


def check_slack(regions: list[Region], bound: list[Bound]) -> None:
    for region in regions:
        if not region.slack:
            continue
        tail = ctypes.string_at(region.data + region.size, region.slack)
        bad = [i for i, b in enumerate(tail) if b != SLACK_BYTE]
        if bad:
            names = sorted(b.index for b in bound if b.region is region)
            raise LaunchError(
                f"out-of-bounds write: buffer(s) {names} were written {bad[0] + 1} byte(s) past "
                f"their end (the simulator pads a buffer of {region.size} bytes by "
                f"{region.slack} to keep its 16-byte alignment, and checks the padding)")


def scalar_region(item: Bound) -> Region:
    region = Region(0, item.size, False)
    region.scalar_bytes = item.scalar
    item.region = region
    return region
