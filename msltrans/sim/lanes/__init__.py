"""Lanes mode: a simdgroup run as one function (the LLVM pass lanes_pass.cpp builds it)."""
