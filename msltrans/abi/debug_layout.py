"""Word layout of the hidden debug buffer of kernels that use `tl.device_print` /
`tl.device_assert`: the lowering writes it (msltrans/lower/control/ops_debug.py), the launcher
decodes it (msltrans/runtime/debug_buffer.py).

Layout (32-bit words):

    [0] cursor: record words used      [1] capacity: record words available
    [2..3] records dropped (64-bit)    [4..5] failed assert elements (64-bit)
    [6..7] reserved                    [8...] records, RECORD_WORDS words each

A record is (site, seq, pid.x, pid.y, pid.z, flat index, thread, value lo, value hi).
"""

from __future__ import annotations

HEADER_WORDS = 8
RECORD_WORDS = 9
CURSOR, CAPACITY, DROPPED, FAILED = 0, 1, 2, 4
METADATA_KEY = "msl_debug_sites"  # the kernel metadata entry holding the site table
