"""`msltrans selftest`: one command for the first Mac that runs msltrans (and for CI).

See msltrans/selftest/runner.py; the cases are msltrans/selftest/cases.py and cases_probe.py,
the accuracy each may claim msltrans/selftest/accuracy.py.
"""

from msltrans.selftest.runner import chip_name, run, save, write_reference

__all__ = ["chip_name", "run", "save", "write_reference"]
