"""ULP error of the GPU's exp2 forms for every float32 argument in [-150, 0] (on the lent GPU).

    python -m benchmarks.proxy.exp2_ulp [--out FILE.json]

The proxy maps MSL's `fast::exp2` to `ex2.approx.ftz.f32` (what Triton's CUDA backend issues
for `tl.math.exp2`) and `precise::exp2` to CUDA's `exp2f`. Each is compared with the float64
`exp2` of the same argument, as ULP of the float32 result (below 2^-126 the subnormal
spacing 2^-149), per unit interval of |x|, beside MSL Table 8.2's bound for `fast::exp2`,
3 + floor(2|x|) ulp, and Table 8.1's 4 ulp for `precise::exp2`. Apple's own `fast::exp2` is
not observable here: this says how far NVIDIA's approximation sits inside Apple's bound.
Needs cupy.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

_SRC = r"""
__device__ float ulps_of(float y, double ref) {
    int e;
    frexp(ref, &e);                                 // ref = m * 2^e, 0.5 <= m < 1
    double ulp = ldexp(1.0, (e - 1 < -126 ? -126 : e - 1) - 23);
    return (float)(fabs((double)y - ref) / ulp);
}

__device__ void flush(int k, float wf, float wp, float *worst_fast, float *worst_precise) {
    atomicMax((int *)&worst_fast[k], __float_as_int(wf));
    atomicMax((int *)&worst_precise[k], __float_as_int(wp));
}

// Each thread sweeps PER consecutive bit patterns from -0 towards -150 (one bucket, |x| in
// [k, k + 1), at a time), so the atomics are few.
extern "C" __global__ void ulps(unsigned int first, unsigned int count, float *worst_fast,
                                float *worst_precise, unsigned int *over_fast,
                                unsigned int *over_precise) {
    const unsigned int PER = 256;
    unsigned long long i0 = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) * PER;
    if (i0 >= count) return;
    int k = -1;
    float wf = 0.0f, wp = 0.0f;
    unsigned int of = 0, op = 0;
    for (unsigned int j = 0; j < PER && i0 + j < count; ++j) {
        float x = __uint_as_float(first + (unsigned int)(i0 + j));
        float fast;
        asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(fast) : "f"(x));
        float precise = exp2f(x);
        double ref = exp2((double)x);
        float ef = ulps_of(fast, ref), ep = ulps_of(precise, ref);
        int kk = (int)floorf(-x);
        if (kk != k) {
            if (k >= 0) flush(k, wf, wp, worst_fast, worst_precise);
            k = kk;
            wf = wp = 0.0f;
        }
        wf = fmaxf(wf, ef);
        wp = fmaxf(wp, ep);
        of += ef > 3.0f + floorf(2.0f * -x);        // MSL Table 8.2, fast::exp2
        op += ep > 4.0f;                            // MSL Table 8.1, precise::exp2
    }
    flush(k, wf, wp, worst_fast, worst_precise);
    atomicAdd(over_fast, of);
    atomicAdd(over_precise, op);
}
"""


def main() -> int:
    import cupy as cp

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    kernel = cp.RawKernel(_SRC, "ulps")
    first = 0x80000000                              # -0.0
    last = int(np.float32(-150.0).view(np.uint32))  # -150.0
    buckets = 151
    worst_f = cp.zeros(buckets, cp.float32)
    worst_p = cp.zeros(buckets, cp.float32)
    over_f = cp.zeros(1, cp.uint32)
    over_p = cp.zeros(1, cp.uint32)
    step = 1 << 28
    for lo in range(first, last + 1, step):
        n = min(step, last + 1 - lo)
        kernel(((n + 256 * 256 - 1) // (256 * 256),), (256,),
               (np.uint32(lo), np.uint32(n), worst_f, worst_p, over_f, over_p))
    cp.cuda.runtime.deviceSynchronize()
    wf, wp = worst_f.get().tolist(), worst_p.get().tolist()
    rows = [{"abs_x_from": k, "fast_ulp": wf[k], "precise_ulp": wp[k],
             "table_8_2_bound": 3 + 2 * k} for k in range(buckets)]
    res = {"arguments": last + 1 - first, "over_fast_bound": int(over_f.get()[0]),
           "over_precise_bound": int(over_p.get()[0]), "rows": rows}
    print(f"{res['arguments']} arguments in [-150, 0]; ex2.approx.ftz over Table 8.2's bound: "
          f"{res['over_fast_bound']}; exp2f over 4 ulp: {res['over_precise_bound']}")
    print("| abs(x) in | ex2.approx.ftz max ulp | exp2f max ulp | Table 8.2 bound (fast) |")
    print("|---|---|---|---|")
    for r in rows:
        k = r["abs_x_from"]
        if k < 4 or k % 16 == 0 or k >= 124:
            print(f"| [{k}, {k + 1}) | {r['fast_ulp']:.2f} | {r['precise_ulp']:.2f} | "
                  f">= {r['table_8_2_bound']} |")
    if a.out:
        a.out.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
