"""The Triton backend `cpu` that `msltrans.inductor.enable()` registers.

Triton finds a backend as a package with a `compiler` module (one concrete `BaseBackend`)
and a `driver` module (one concrete `DriverBase`). This one compiles Inductor's `cpu` and
`mps` targets as Metal (msltrans.backend's stages) and never becomes the active driver.
"""
