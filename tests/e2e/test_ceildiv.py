"""arith.ceildivsi / arith.ceildivui (from the tensor-descriptor rewrite and other passes)
against Python's exact integer arithmetic, every width, both signs and the extremes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.run_kernel import compile_ttgir, dispatch
from tests.support.ttgir_gen import elementwise_kernel_1d, write

BLOCK = 128
_SIGNED = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}


def _values(dt: type, unsigned: bool, n: int, seed: int) -> np.ndarray:
    info = np.iinfo(dt)
    rng = np.random.default_rng(seed)
    lo, hi = (0, 2 * int(info.max) + 1) if unsigned else (int(info.min), int(info.max))
    edge = [lo, hi, lo + 1, hi - 1, 1, 2, 3, 7, hi // 2]
    if not unsigned:
        edge += [-1, -2, -3, -7]
    v = np.concatenate([np.array(edge, dtype=object),
                        _random(rng, lo, hi, n - len(edge))])
    return v


def _random(rng: np.random.Generator, lo: int, hi: int, n: int) -> np.ndarray:
    # uniform over [lo, hi] for any width (u64 exceeds numpy's int64 bounds)
    span = hi - lo + 1
    raw = rng.integers(0, 2**32, (n, 3), dtype=np.uint64).astype(object)
    return np.array([lo + (int(r[0]) << 64 | int(r[1]) << 32 | int(r[2])) % span for r in raw],
                    dtype=object)


def _to_storage(v: np.ndarray, dt: type) -> np.ndarray:
    bits = np.iinfo(dt).bits
    return np.array([((int(x) + (1 << bits)) % (1 << bits)) for x in v], dtype=np.uint64) \
        .astype(np.dtype(dt).str.replace("i", "u")).view(dt)


@pytest.mark.parametrize("elem", list(_SIGNED))
@pytest.mark.parametrize("unsigned", [False, True])
def test_ceildiv_is_exact(tmp_path: Path, elem: str, unsigned: bool) -> None:
    dt = _SIGNED[elem]
    op = "arith.ceildivui" if unsigned else "arith.ceildivsi"
    t = f"tensor<{BLOCK}x{elem}, #L>"
    path = write(tmp_path, "k", elementwise_kernel_1d(
        BLOCK, 2, [elem, elem], elem, f"%res = {op} %x0, %x1 : {t}"))
    program = compile_ttgir(path)
    n = 301
    a, b = _values(dt, unsigned, n, 1), _values(dt, unsigned, n, 2)[::-1].copy()
    b[b == 0] = 5  # division by zero is poison: not compared
    out = np.zeros(n, dtype=dt)
    dispatch(program, ((n + BLOCK - 1) // BLOCK,), (_to_storage(a, dt), _to_storage(b, dt),
                                                    out, np.int32(n)))
    bits = np.iinfo(dt).bits
    lo = -(1 << (bits - 1))
    want = []
    for x, y in zip(a, b, strict=True):
        x, y = int(x), int(y)
        if not unsigned and x == lo and y == -1:
            want.append(lo)  # overflow (poison in the IR): wraps, as arith.divsi here
        else:
            want.append(-((-x) // y))  # ceil(x / y), exact
    assert np.array_equal(out, _to_storage(np.array(want, dtype=object), dt))
