"""TTGIR dataclasses → MSL, op by op (`lower_module`); families register in ops_*.py."""

from msltrans.lower.kernel import lower_module
from msltrans.lower.program import MslParam, MslProgram
from msltrans.lower.registry import lowers, supported_ops

__all__ = ["MslParam", "MslProgram", "lower_module", "lowers", "supported_ops"]
