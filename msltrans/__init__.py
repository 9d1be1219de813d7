"""msltrans: run unmodified @triton.jit kernels on Apple GPUs by transpiling TTGIR to MSL."""

from msltrans.errors import MetalNonRecoverableError

__all__ = ["MetalNonRecoverableError"]
__version__ = "0.1.0"
