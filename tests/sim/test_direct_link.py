"""The one-step compile makes an object and runs the driver's own linker command on it
(msltrans/sim/compiler.py Compiler.linker): the library is the one the driver's link step
made (same code, dynamic symbols and sections), in lanes mode and on fibers."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import msltrans.sim as sim
from msltrans.sim import compiler
from msltrans.sim.compiler import find_compiler
from tests.support.sim_cache import fresh_cache
from tests.support.sim_modes import assert_same_bytes_in_each_mode

KERNEL = """#include <metal_stdlib>
using namespace metal;
kernel void linked(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
    float s = simd_sum(exp2(x[i]));
    y[i] = fma(s, 0.5f, x[i]);
}
"""


def _run(lib) -> list[np.ndarray]:
    x = np.random.default_rng(8).standard_normal(64).astype(np.float32)
    y = np.zeros(64, np.float32)
    lib.linked(x, y, threads=64, group_size=32)
    return [y]


def _facts(path: Path) -> tuple[str, ...]:
    def tool(*argv: str) -> str:
        return subprocess.run([*argv, str(path)], capture_output=True, text=True,
                              check=True).stdout.split("\n", 2)[-1]

    sections = "\n".join(line for line in tool("readelf", "-S", "-W").splitlines()
                         if ".debug" not in line)
    return tool("objdump", "-d", "--no-show-raw-insn"), tool("readelf", "--dyn-syms", "-W"), \
        sections


def test_the_driver_names_one_linker_command() -> None:
    command = find_compiler().linker
    assert command is not None, "the fast path is off on this machine"
    assert command.count("OUTPUT") == 1 and command.count("INPUT") == 1
    assert "-shared" in command


def test_direct_link_gives_the_drivers_library(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    if shutil.which("objdump") is None or shutil.which("readelf") is None:
        pytest.skip("binutils' objdump/readelf are not installed")
    fresh_cache(monkeypatch, tmp_path)
    direct = sim.compile_shader(KERNEL, name="direct.metal")
    monkeypatch.setattr(compiler.Compiler, "linker", property(lambda self: None))
    driver = sim.compile_shader(KERNEL, name="driver.metal")
    assert direct.path != driver.path
    assert _facts(direct.path) == _facts(driver.path)
    assert direct.linked.lanes and driver.linked.lanes
    expected = _run(driver)
    assert np.isfinite(expected[0]).all()
    assert_same_bytes_in_each_mode(expected, lambda: _run(direct), monkeypatch)
