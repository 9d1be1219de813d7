"""The conformance runs' shared pieces: the runners in scripts/ import them as `conformance.*`
(their folder, scripts/, is first on sys.path when run as `python scripts/run_*.py`), the
tests as `scripts.conformance.*`; the pytest plugins (msltrans_conformance, liger_bf16,
inductor_shims) are loaded by name from this folder on the child pytest's PYTHONPATH."""
