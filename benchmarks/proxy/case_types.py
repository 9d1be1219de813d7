"""The GPU proxy's case records (launch, hand reference, size, case): plain data shared by
benchmarks/proxy/cases.py and cases_bwd.py, importable where msltrans is not (the lent GPU)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# numpy dtype names of the Triton pointer types the cases use
NP = {"*fp32": np.float32, "*fp16": np.float16, "*i32": np.int32}


@dataclass(frozen=True)
class Launch:
    """A kernel launch: arguments by name (tensor names or scalars), grid and constexprs."""

    grid: tuple[int, int, int]
    args: dict[str, Any]  # name -> tensor name (str) or a Python number
    types: dict[str, str]  # name -> Triton type ("*fp32", "i32", "fp32")
    constexprs: dict[str, Any] = field(default_factory=dict)
    num_warps: int = 4


@dataclass(frozen=True)
class Hand:
    """A hand-written MSL reference: file, defines, threads per group, launch. `exact`:
    its GPU output must equal the simulator's bit for bit (False where it uses simd_sum,
    whose order differs between the simulator and the CUDA emulation)."""

    file: str
    kernel: str
    threads: int
    defines: dict[str, str]
    grid: tuple[int, int, int]
    args: list[Any]  # buffer order: tensor names or ("i32"|"fp32", value)
    exact: bool = True


@dataclass(frozen=True)
class Size:
    inputs: dict[str, tuple[str, tuple[int, ...]]]  # name -> (Triton type, shape)
    outputs: tuple[str, ...]
    launch: Launch
    hand: Hand | None
    work: float  # bytes moved (memory-bound) or flops (matmul) per run
    # Triton's CUDA backend with other tiles than msltrans (None: the same launch), where
    # the tile a Mac wants (32 KB of threadgroup memory, simdgroup fragments in registers)
    # is not the one a Hopper GPU wants: each side then runs its own best-suited tile
    triton_launch: Launch | None = None
    # inputs derived from the random ones (the backward's row statistics), set in place
    prepare: Callable[[dict[str, np.ndarray]], None] | None = None


@dataclass(frozen=True)
class Case:
    name: str
    kernel: str  # function name in kernels.py
    metric: str  # "GB/s" | "TFLOP/s"
    check: Size
    time: Size
    exact: bool  # simulator and GPU outputs must be bit-identical (False where fast::
    # sqrt/divide or exp run: the simulator computes them exactly, CUDA approximately)
    reference: Callable[[dict[str, Any]], dict[str, Any]]  # float64 results (torch)
    rtol: float
    goal: str  # what the issue asks of this row
