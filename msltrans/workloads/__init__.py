"""The project's shared Triton workloads: every @triton.jit kernel that more than one of the
tests, the benchmarks, the scripts and the self-test runs, written once here (with its
launch, inputs and float64 reference where those are shared too).

- Triton's tutorials' work, written for msltrans: `softmax_layernorm` (02, 05),
  `grouped_matmul` (03), `dropout` (04), `attention` (06, forward and backward) and
  `attention_plain` (a forward without helpers or descriptors, the GPU proxy's);
- the tt.dot variants (`dot_kernels`) and the bitonic top-k (`topk_kernel`);
- `small_kernels`: the self-test's vector add and one-row softmax and the tests' 2-D broadcast
  add, which the compile-latency benchmark and the profiler's CLI test run too;
- kernels shared with the CUDA reference recorders in scripts/cuda_reference
  (`scan_order_kernels`, `nan_sign_kernels`, `dot_scaled_cases_kernels`,
  `elementwise_kernels`, `fp8_kernels`): the same source
  runs on Triton's CUDA backend there and through msltrans in the tests that replay it.

Pure Triton and torch: nothing here imports the rest of msltrans, so the CUDA recorders import
these modules on an NVIDIA machine (`PYTHONPATH=.` from the repository root).
"""
