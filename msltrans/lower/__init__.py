"""TTGIR dataclasses → MSL, op by op (`lower_module`).

The core is this folder's top level (kernel, emitter, registry, program, bindings, types,
layout table, literals, templates); each op family lives in a wing that registers its
lowerings from `ops_*.py` modules: elementwise/, memory/, atomics/, reduce/, control/,
tensor/, dot/. Wings import the core and, where one family builds on another, a lower wing;
the core imports no wing except from kernel.py, which assembles the kernel.
"""

from msltrans.lower.kernel import lower_module
from msltrans.lower.program import MslParam, MslProgram
from msltrans.lower.registry import lowers, supported_ops

__all__ = ["MslParam", "MslProgram", "lower_module", "lowers", "supported_ops"]
