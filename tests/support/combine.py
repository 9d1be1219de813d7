"""@triton.jit combine functions for tl.reduce / tl.associative_scan, shared by the reduce,
scan and fuzz tests."""

import triton
import triton.language as tl


@triton.jit
def mul(a, b):
    return a * b


@triton.jit
def bit_and(a, b):
    return a & b


@triton.jit
def bit_or(a, b):
    return a | b


@triton.jit
def maximum(a, b):
    return tl.maximum(a, b)


@triton.jit
def max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def min_nan(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
