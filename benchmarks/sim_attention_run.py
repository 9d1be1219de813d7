"""Run time and result bits of the attention kernels tests/e2e/workloads/test_attention.py
builds, on the simulator (Triton's Metal driver, engine `sim`).

    PYTHONPATH=<checkout> python3 benchmarks/sim_attention_run.py [--repeat 20]

runs each case's forward once, then times its backward (`attn_backward`: the delta and the
dq/dk/dv kernels) --repeat times after a first call that builds, and prints the median and
minimum milliseconds of a call and a hash of the gradients' bytes (equal hashes from two
checkouts: the same bits). MSLTRANS_SIM_LANES=fibers times the per-thread entries instead.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time

import torch

from msltrans.workloads.attention import attn_backward, attn_forward, inputs

# (Z, H, HEAD_DIM, causal): test_backward_matches_float64_autograd's cases.
CASES = [(1, 2, 32, False), (1, 2, 32, True), (2, 1, 64, False), (2, 1, 64, True),
         (1, 1, 128, False), (1, 1, 128, True)]


def run_case(z: int, h: int, head_dim: int, causal: bool, repeat: int) -> str:
    n_ctx, sm_scale = 128, 0.5
    q, k, v = inputs(z, h, n_ctx, head_dim)
    do = torch.empty_like(q).normal_(0.0, 1.0, generator=torch.Generator().manual_seed(7))
    o, m = attn_forward(q, k, v, causal, sm_scale, 64, min(64, head_dim))
    grads = attn_backward(q, k, v, o, m, do, causal, sm_scale)   # builds
    digest = hashlib.sha256(b"".join(g.contiguous().view(torch.uint8).numpy().tobytes()
                                     for g in grads)).hexdigest()[:16]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        again = attn_backward(q, k, v, o, m, do, causal, sm_scale)
        times.append(time.perf_counter() - start)
        assert all(torch.equal(a, b) for a, b in zip(grads, again, strict=True))
    return (f"Z={z} H={h} D={head_dim} causal={causal!s:5}  median "
            f"{statistics.median(times) * 1e3:7.2f} ms  min {min(times) * 1e3:7.2f} ms  "
            f"bits {digest}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    for case in CASES:
        print(run_case(*case, args.repeat), flush=True)


if __name__ == "__main__":
    main()
