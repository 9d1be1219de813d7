"""CPU Metal simulator: compile MSL with clang against the project's metal_stdlib shim and
run it one fiber per Metal thread, with checks a GPU does not make (out-of-bounds accesses,
divergent barriers, threadgroup memory and thread limits, stack overflow, races, plain loads
of other threadgroups' stores from buffers that are not coherent(device)).

    lib = msltrans.sim.compile_shader(src)
    lib.my_kernel(out, x, 3.0, threads=n, group_size=256)
    msltrans.sim.check_races(lib.my_kernel, out, x, 3.0, threads=n, group_size=256)
"""

from msltrans.sim.compiler import find_compiler
from msltrans.sim.errors import (
    CoherenceError,
    CompileError,
    CompilerNotFoundError,
    DeviceError,
    DeviceFailure,
    DivergenceError,
    DivisionTrapError,
    InvalidAddressError,
    KernelTimeoutError,
    LaunchError,
    OutOfBoundsError,
    RaceError,
    SimError,
    StackOverflowError,
    ThreadgroupMemoryError,
)
from msltrans.sim.library import Kernel, Library, compile_shader
from msltrans.sim.profiling import Profile, profile
from msltrans.sim.races import RaceReport, check_races

__all__ = [
    "CoherenceError", "CompileError", "CompilerNotFoundError", "DeviceError", "DeviceFailure",
    "DivergenceError", "DivisionTrapError", "InvalidAddressError", "Kernel", "KernelTimeoutError",
    "LaunchError", "Library", "OutOfBoundsError", "Profile", "RaceError", "RaceReport", "SimError",
    "StackOverflowError", "ThreadgroupMemoryError", "check_races", "compile_shader",
    "find_compiler", "profile",
]
