"""What a case sees: seeded inputs, tensors on the engine's device, outputs as raw bits, the
MSL of every kernel it launched (for the accuracy claims, msltrans/selftest/accuracy.py)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

# Storage of each dtype the cases use: torch dtype name, numpy view of its bits.
_TORCH = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16", "int32": "int32",
          "int16": "int16", "int8": "int8", "uint8": "uint8", "float8e4nv": "float8_e4m3fn",
          "float8e5": "float8_e5m2"}
_BITS = {"float32": np.uint32, "float16": np.uint16, "bfloat16": np.uint16, "int32": np.int32,
         "int16": np.int16, "int8": np.int8, "uint8": np.uint8, "float8e4nv": np.uint8,
         "float8e5": np.uint8}


class Skip(Exception):  # noqa: N818 - a verdict, not an error
    """A case that cannot run on this engine (the reason goes into the receipt)."""


class Context:
    def __init__(self, case: str, device: str, full: bool, engine: str = "sim") -> None:
        import torch
        import triton.language as tl

        self.torch, self.tl = torch, tl
        self.device = device
        self.full = full
        self.engine = engine
        self.sources: list[str] = []          # the MSL of every kernel launched
        self.handwritten: list[str] = []      # those of compile_msl (not msltrans's)
        self.properties: dict[str, Any] = {}  # measured facts the receipt records
        digest = hashlib.sha256(case.encode()).digest()
        self.rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))

    # ---- kernels ---------------------------------------------------------------------------
    def launch(self, kernel: Any, grid: tuple[int, ...], *args: Any, **kwargs: Any) -> Any:
        """`kernel[grid](*args, **kwargs)`, keeping the MSL it compiled to."""
        compiled = kernel[grid](*args, **kwargs)
        msl = compiled.asm.get("msl") if compiled is not None else None
        if msl is not None:
            self.sources.append(msl.decode() if isinstance(msl, bytes) else str(msl))
        return compiled

    def compile_msl(self, source: str, msl_version: int | str | None = None) -> Any:
        """Hand-written MSL through the engine's compiler: torch.mps.compile_shader on a Mac
        (the language version is the one torch picks), msltrans.sim elsewhere (msltrans's
        target version unless `msl_version` is given)."""
        self.sources.append(source)
        self.handwritten.append(source)
        if self.engine == "mps":
            return self.torch.mps.compile_shader(source)
        from msltrans import sim

        return sim.compile_shader(source, name=f"selftest_{len(self.sources)}.metal",
                                  msl_version=msl_version)

    # ---- inputs (numpy, platform-independent) ----------------------------------------------
    def normal(self, shape: Any) -> np.ndarray:
        return self.rng.standard_normal(shape).astype(np.float32)

    def operand(self, shape: Any, dtype: str) -> np.ndarray:
        if dtype == "int8":
            return self.rng.integers(-8, 9, shape).astype(np.int8)
        scale = 0.5 if dtype.startswith("float8") else 1.0
        return self.normal(shape) * np.float32(scale)

    # ---- device tensors ----------------------------------------------------------------------
    def _cpu(self, array: np.ndarray, dtype: str | None) -> Any:
        t = self.torch.from_numpy(np.ascontiguousarray(array))
        if dtype is None:
            return t
        target = getattr(self.torch, _TORCH[dtype])
        return t if t.dtype == target else t.to(target)

    def to_bits(self, array: np.ndarray, dtype: str) -> np.ndarray:
        """The raw bits `array` has once converted to `dtype` (as `put` sends it)."""
        t = self._cpu(array, dtype)
        return t.view(getattr(self.torch, _TORCH["uint8" if t.element_size() == 1 else
                                           "int16" if t.element_size() == 2 else "int32"])
                      ).numpy().view(_BITS[dtype]).copy()

    def put(self, array: np.ndarray, dtype: str | None = None) -> Any:
        t = self._cpu(array, dtype)
        if dtype is not None and dtype.startswith("float8"):
            import triton

            # fp8 travels as its bytes (MPS has no fp8 tensors); Triton reads the dtype.
            raw = t.view(self.torch.uint8).to(self.device)
            return triton.reinterpret(raw, getattr(self.tl, dtype))
        return t.to(self.device)

    def empty(self, shape: Any, dtype: str) -> Any:
        t = self.torch.full(shape if isinstance(shape, tuple) else (shape,), 0,
                            dtype=getattr(self.torch, _TORCH[dtype]))
        if dtype.startswith("float"):
            t.fill_(float("nan"))  # untouched outputs show up
        return t.to(self.device)

    def zeros(self, shape: Any, dtype: str) -> Any:
        return self.torch.zeros(shape, dtype=getattr(self.torch, _TORCH[dtype])).to(self.device)

    # ---- outputs ------------------------------------------------------------------------------
    def bits(self, tensor: Any) -> np.ndarray:
        if isinstance(tensor, np.ndarray):
            return tensor
        t = tensor.detach().to("cpu").contiguous()
        size = t.element_size()
        view = {1: self.torch.uint8, 2: self.torch.int16, 4: self.torch.int32,
                8: self.torch.int64}[size]
        raw = t.view(view).numpy()
        name = str(t.dtype).replace("torch.", "")
        if name in ("float32",):
            return raw.view(np.uint32).reshape(-1).copy()
        if name in ("float16", "bfloat16"):
            return raw.view(np.uint16).reshape(-1).copy()
        return t.numpy().reshape(-1).copy()

    def values(self, array: np.ndarray, dtype: str) -> np.ndarray:
        """float64 values of `array` as `dtype` holds them: plain float values are converted
        as `put` sends them; anything else is taken as the raw bits of `dtype`."""
        from msltrans.selftest.compare import to_float64

        if dtype in ("int8", "int16", "int32"):
            return array.astype(np.float64)
        if array.dtype.kind == "f":
            array = self.to_bits(array, dtype)
        if dtype.startswith("float8"):
            t = self.torch.from_numpy(array.view(np.uint8)).view(getattr(self.torch,
                                                                          _TORCH[dtype]))
            return t.float().numpy().astype(np.float64)
        return to_float64(array, dtype)

    @staticmethod
    def cdiv(a: int, b: int) -> int:
        return -(-a // b)

    @staticmethod
    def pow2(n: int) -> int:
        return 1 << max(0, (n - 1).bit_length())
