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
SET_BYTES_LIMIT = 4096  # setBytes is for data smaller than 4 KB
