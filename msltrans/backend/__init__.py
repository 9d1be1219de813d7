"""The Triton plugin (entry point `triton.backends: metal = msltrans.backend`).

Triton imports `msltrans.backend.compiler` (MetalBackend) and `msltrans.backend.driver`
(MetalDriver) itself; nothing is imported here so that discovery stays cheap.
"""
