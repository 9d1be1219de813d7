"""numpy references for tt.reduce / tt.scan written to Triton's IR semantics.

Integers wrap (computed on uint64 bit patterns, then truncated), signedness follows the
dtype (Triton picks maxsi/maxui from it). Float max/min follow the combine op:
`maxnumf`/`minnumf` (tl.max, tl.min, tl.maximum) drop NaN unless all are NaN, `maximumf`/
`minimumf` (propagate_nan=ALL) propagate it; both order -0.0 below +0.0. Float sums/products
are compared within a tolerance: Triton's order (and ours, docs/reductions.md) is a tree,
not numpy's pairwise sum.
"""

from __future__ import annotations

import numpy as np


def _bits(x: np.ndarray) -> np.ndarray:
    return x.astype(np.int64).astype(np.uint64) if x.dtype.kind == "i" else x.astype(np.uint64)


def int_reduce(x: np.ndarray, op: str, axis: int | None, out_dtype: np.dtype) -> np.ndarray:
    """sum/prod/and/or/xor with wrap-around; max/min by the dtype's signedness."""
    if op in ("max", "min"):
        r = x.max(axis=axis) if op == "max" else x.min(axis=axis)
        return np.asarray(r).astype(out_dtype)
    u = _bits(x)
    with np.errstate(over="ignore"):
        if op == "sum":
            r = u.sum(axis=axis, dtype=np.uint64)
        elif op == "prod":
            r = u.prod(axis=axis, dtype=np.uint64)
        else:
            fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
            r = fn.reduce(u, axis=axis)
    return np.asarray(r).astype(out_dtype)


def _signed_zero_fix(r: np.ndarray, x: np.ndarray, axis: int | None, op: str) -> np.ndarray:
    """-0.0 < +0.0: a zero max is +0.0 if any +0.0 took part; a zero min -0.0 if any -0.0."""
    r = np.array(r, copy=True)
    pos = ((x == 0) & ~np.signbit(x)).any(axis=axis)
    neg = ((x == 0) & np.signbit(x)).any(axis=axis)
    zero = r == 0
    if op == "max":
        r = np.where(zero & pos, np.zeros_like(r), np.where(zero, -np.zeros_like(r), r))
    else:
        r = np.where(zero & neg, -np.zeros_like(r), np.where(zero, np.zeros_like(r), r))
    return r


def float_minmax(x: np.ndarray, op: str, axis: int | None, propagate_nan: bool) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        if propagate_nan:
            r = np.max(x, axis=axis) if op == "max" else np.min(x, axis=axis)
        else:
            r = np.fmax.reduce(x, axis=axis) if op == "max" else np.fmin.reduce(x, axis=axis)
    return _signed_zero_fix(np.asarray(r), x, axis, op)


def assert_float_same(got: np.ndarray, ref: np.ndarray) -> None:
    """Bit-exact, except that any NaN equals any NaN."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    nan = np.isnan(ref)
    assert (np.isnan(got) == nan).all(), (got, ref)
    g, r = got[~nan], ref[~nan]
    same = (g == r) & (np.signbit(g) == np.signbit(r))
    assert same.all(), (g[~same], r[~same])


def assert_sum_close(got: np.ndarray, x: np.ndarray, axis: int | None, scan: bool = False,
                     reverse: bool = False) -> None:
    """A float sum (or cumsum) within n·eps·Σ|x| of the exact value."""
    x64 = x.astype(np.float64)
    if scan:
        ax = 0 if axis is None else axis
        xs = np.flip(x64, ax) if reverse else x64
        ref = np.cumsum(xs, axis=ax)
        mag = np.cumsum(np.abs(xs), axis=ax)
        if reverse:
            ref, mag = np.flip(ref, ax), np.flip(mag, ax)
        n = x.shape[ax]
    else:
        ref = x64.sum(axis=axis)
        mag = np.abs(x64).sum(axis=axis)
        n = x.size if axis is None else x.shape[axis]
    eps = float(np.finfo(x.dtype).eps)
    tol = (n + 2) * eps * mag + float(np.finfo(x.dtype).tiny)
    err = np.abs(np.asarray(got, np.float64) - ref)
    assert (err <= tol).all(), (np.max(err - tol), got, ref)


def int_scan(x: np.ndarray, op: str, axis: int, reverse: bool) -> np.ndarray:
    u = _bits(x)
    if reverse:
        u = np.flip(u, axis)
    with np.errstate(over="ignore"):
        r = np.cumsum(u, axis=axis, dtype=np.uint64) if op == "sum" else np.cumprod(
            u, axis=axis, dtype=np.uint64)
    if reverse:
        r = np.flip(r, axis)
    return r.astype(x.dtype)
