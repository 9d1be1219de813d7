"""`msltrans selftest`: one command for the first Mac that runs msltrans (and for CI).

See msltrans/selftest/runner.py; the cases are msltrans/selftest/cases.py.
"""

from msltrans.selftest.runner import run, save, write_reference

__all__ = ["run", "save", "write_reference"]
