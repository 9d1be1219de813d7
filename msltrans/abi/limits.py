"""Apple GPU limits the lowering, the launcher and the simulator hold kernels to.

Sources: the Metal feature set tables (threadgroup memory, threads per threadgroup, buffer
argument table entries per stage) and the MSL specification (SIMD-group width of Apple
GPUs; `[[buffer(n)]]` indices, section 5.2.1). The simulator's C runtime repeats two of
them as macros (`msltrans/sim/runtime/mslsim.h`: MSL_SIM_MAX_THREADS, MSL_SIM_TG_LIMIT);
`tests/test_abi_limits.py` holds them equal.
"""

from __future__ import annotations

SIMD_WIDTH = 32  # threads of one SIMD group; one Triton warp is one simdgroup
THREADGROUP_MEMORY_BYTES = 32768  # threadgroup memory one threadgroup may allocate
MAX_THREADS_PER_THREADGROUP = 1024  # maxTotalThreadsPerThreadgroup's ceiling
MAX_BUFFER_INDEX = 30  # the buffer argument table: [[buffer(0)]] ... [[buffer(30)]]
BUFFER_TABLE_SLOTS = MAX_BUFFER_INDEX + 1  # 31 entries
SET_BYTES_LIMIT = 4096  # setBytes is for data smaller than 4 KB

# msltrans's kernel ABI (msltrans/lower/kernel_args.py): pointers bind [[buffer(0)]] on, then
# the scalar-argument struct, then the device_print/assert buffer. A kernel with at most
# DIRECT_POINTER_SLOTS pointers binds every pointer to its own slot whatever else it takes
# (31 slots less the struct and the debug buffer), on every engine.
DIRECT_POINTER_SLOTS = BUFFER_TABLE_SLOTS - 2  # 29
# Past the table, the last pointers travel as GPU addresses in one argument buffer (a struct of
# device pointers, 8 bytes each), sent like the scalar struct with one setBytes.
GPU_ADDRESS_BYTES = 8
MAX_ARGUMENT_BUFFER_POINTERS = SET_BYTES_LIMIT // GPU_ADDRESS_BYTES  # 512
