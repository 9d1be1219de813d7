"""TTGIR → frozen dataclasses (`read_module`, `read_ttgir_file`)."""

from msltrans.ir.model import (
    Argument,
    Block,
    Function,
    Location,
    Module,
    Op,
    Region,
    Value,
)
from msltrans.ir.types import OtherType, PointerType, ScalarType, TensorType, Type, parse_type
from msltrans.ir.walker import read_module, read_ttgir_file

__all__ = [
    "Argument", "Block", "Function", "Location", "Module", "Op", "OtherType", "PointerType",
    "Region", "ScalarType", "TensorType", "Type", "Value", "parse_type", "read_module",
    "read_ttgir_file",
]
