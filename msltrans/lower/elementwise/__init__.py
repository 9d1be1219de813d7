"""Elementwise ops: arith (integer and float), math, Triton's own elementwise ops, libdevice,
fp8 as a storage format, tl.map_elementwise, hints."""
