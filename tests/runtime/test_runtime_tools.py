"""Triton's own tools on the Metal driver: autotune, triton.testing.do_bench, .ttgir launch,
and the examples' promised output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.driver import driver

from tests.support.kernels import vadd_kernel

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def sim_driver():
    active = driver.active
    if getattr(active, "engine_name", None) != "sim":
        pytest.skip("needs the Metal driver on the simulator engine")
    return active


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=1),
                          triton.Config({"BLOCK": 256}, num_warps=2, num_stages=2)],
                 key=["n"])
@triton.jit
def tuned_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def test_autotune_uses_the_metal_benchmarker():
    src = torch.randn(1000)
    dst = torch.empty(1000)
    tuned_copy[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](src, dst, 1000)
    assert torch.equal(src, dst)
    assert tuned_copy.best_config.kwargs["BLOCK"] in (64, 256)


def test_triton_testing_do_bench_works():
    x, y = torch.randn(4096), torch.randn(4096)
    out = torch.empty(4096)
    ms = triton.testing.do_bench(lambda: vadd_kernel[(4,)](x, y, out, 4096, BLOCK=1024),
                                 warmup=5, rep=20)
    assert 0 < ms < 1000
    assert torch.equal(out, x + y)


def test_compiled_ttgir_file_launches(tmp_path):
    ttgir = tmp_path / "add.ttgir"
    code = subprocess.run(
        [sys.executable, "-m", "msltrans.cli", "dump", str(ROOT / "tests/support/kernels.py"),
         "--kernel", "vadd_kernel", "--stage", "ttgir", "--signature", "n=i32",
         "--constexpr", "BLOCK=128"], capture_output=True, text=True, timeout=300)
    assert code.returncode == 0, code.stderr
    ttgir.write_text(code.stdout)
    kernel = triton.compile(str(ttgir))
    n = 300
    xs = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
    ys = np.random.default_rng(2).standard_normal(n, dtype=np.float32)
    out = torch.empty(n)
    kernel[(triton.cdiv(n, 128), 1, 1)](torch.from_numpy(xs), torch.from_numpy(ys), out, n)
    assert out.numpy().tobytes() == (xs + ys).tobytes()


@pytest.mark.parametrize("script, expected, rc", [
    ("vector_add.py", "max error 0", 0),
    ("broadcast_2d.py", "bit-identical: True", 0),
])
def test_examples_print_what_the_readme_promises(script, expected, rc):
    env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="1")
    out = subprocess.run([sys.executable, str(ROOT / "examples" / script)], capture_output=True,
                         text=True, timeout=300, env=env)
    assert out.returncode == rc, out.stderr[-2000:]
    assert expected in out.stdout


def test_loops_example_is_honest():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "loops_and_branches.py")],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, TRITON_DEFAULT_FP_FUSION="1"))
    # The loops and branches lower: the example checks its result against numpy and exits 0
    # (1 on a wrong answer, 2 on a refusal).
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
