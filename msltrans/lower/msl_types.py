"""MLIR types → MSL spellings. Storage types are signed; signedness lives in the ops."""

from __future__ import annotations

import warnings

from msltrans import settings
from msltrans.errors import MetalNonRecoverableError
from msltrans.ir.types import PointerType, ScalarType, TensorType, Type

_SCALAR = {
    "i1": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long",
    "index": "long", "f16": "half", "bf16": "bfloat", "f32": "float",
    # fp8 is a storage format on Metal: one byte, decoded/encoded by ops_fp8.py.
    "f8E4M3FN": "uchar", "f8E5M2": "uchar",
}
FP8_TYPES = frozenset({"f8E4M3FN", "f8E5M2"})
_UNSIGNED = {"char": "uchar", "short": "ushort", "int": "uint", "long": "ulong", "bool": "bool",
             "uchar": "uchar"}
_TRITON = {
    "i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "f16": "fp16",
    "bf16": "bf16", "f32": "fp32", "f64": "fp64", "f8E4M3FN": "fp8e4nv", "f8E5M2": "fp8e5",
}
# torch.mps's cast names ("int64"/"float" are its defaults for Python ints/floats); MSL
# `bool` is one byte, sent as uint8 0/1.
_ARG_CASTS = {
    "i1": "uint8", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "f16": "fp16", "bf16": "bf16", "f32": "float", "f64": "float",
}
DEFAULT_WIDTH_CASTS = frozenset({"int64", "float"})  # what torch sends without a cast
# Triton's global memory is space 1. `tl.const` pointers are in Triton's "constant" space:
# read-only global memory (the front end rejects stores through them). Metal's `constant`
# space has a size cap a tensor may exceed, so they stay `device` pointers.
_ADDRESS_SPACES: dict[int | str, str] = {1: "device", "constant": "device"}


def _fp64(where: str | None) -> str:
    if settings.raw(settings.FP64) == "refuse":
        raise MetalNonRecoverableError("fp64 is not available on Apple GPUs", location=where,
                                       hint="unset MSLTRANS_FP64=refuse to downcast to fp32")
    warnings.warn(f"fp64 downcast to fp32 on Metal ({where or 'kernel'})", stacklevel=3)
    return "float"


def scalar_ctype(t: ScalarType, where: str | None = None) -> str:
    if t.name == "f64":
        return _fp64(where)
    if t.name not in _SCALAR:
        if t.name.startswith("f8"):
            raise MetalNonRecoverableError(
                f"fp8 type {t.name} is not supported on Metal", location=where,
                hint="use tl.float8e4nv (f8E4M3FN) or tl.float8e5 (f8E5M2); the AMD FNUZ "
                     "types and fp8e4b15 are not implemented")
        raise MetalNonRecoverableError(f"type {t.name} has no Metal equivalent", location=where,
                                       hint="wide integers are not supported")
    return _SCALAR[t.name]


def ctype(t: Type, where: str | None = None) -> str:
    """The MSL type of one element (a tensor's element type, or the scalar itself)."""
    if isinstance(t, TensorType):
        return ctype(t.element, where)
    if isinstance(t, ScalarType):
        return scalar_ctype(t, where)
    if isinstance(t, PointerType):
        if not isinstance(t.pointee, ScalarType):
            raise MetalNonRecoverableError(f"pointer to {t.pointee}", location=where,
                                           hint="block pointers are not supported")
        space = _ADDRESS_SPACES.get(t.address_space)
        if space is None:
            raise MetalNonRecoverableError(f"pointer address space {t.address_space}",
                                           location=where)
        elem = "char" if t.pointee.name == "i1" else scalar_ctype(t.pointee, where)
        return f"{space} {elem}*"
    raise MetalNonRecoverableError(f"type {t} is not supported", location=where)


def unsigned(c: str) -> str:
    """The unsigned twin of a storage integer type (for ops that say unsigned)."""
    return _UNSIGNED[c]


def triton_type(t: Type) -> str:
    if isinstance(t, PointerType) and isinstance(t.pointee, ScalarType):
        return "*" + _TRITON.get(t.pointee.name, t.pointee.name)
    if isinstance(t, ScalarType):
        return _TRITON.get(t.name, t.name)
    return str(t)


def arg_cast(t: ScalarType, where: str | None = None) -> str:
    if t.name not in _ARG_CASTS:
        raise MetalNonRecoverableError(f"kernel argument of type {t.name}", location=where)
    if t.name == "f64":
        _fp64(where)
    return _ARG_CASTS[t.name]


def element(t: Type) -> ScalarType | PointerType:
    return t.element if isinstance(t, TensorType) else t  # type: ignore[return-value]
