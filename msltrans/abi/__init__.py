"""The ground floor: Metal's limits and the kernel ABI, one definition each.

`limits` holds Apple's numbers (SIMD width, threadgroup memory, threads per threadgroup, the
buffer argument table, setBytes); `scalar_struct` packs a kernel's scalar arguments into the
bytes of its `constant` struct; `debug_layout` is the word layout of the hidden buffer that
`tl.device_print` / `tl.device_assert` write; `alignment` keys the alignment a kernel was
specialised on as the simulator places buffers (direct buffers, argument-buffer slots). The
lowering (`msltrans.lower`), the launcher (`msltrans.runtime`), the plugin
(`msltrans.backend`) and the simulator (`msltrans.sim`) all
import from here; this package imports nothing of msltrans but `msltrans.errors`.
"""
