"""The Triton plugin (entry point `triton.backends: metal = msltrans.backend`).

Triton imports `msltrans.backend.compiler` (MetalBackend) and `msltrans.backend.driver`
(MetalDriver) itself while `import triton` discovers its backends. Importing triton here first
means `from msltrans.backend.driver import MetalDriver` in a fresh interpreter lets that
discovery finish before the driver module runs (otherwise discovery finds a half-imported
driver module and raises); when triton is already imported this line costs nothing.
Then `check_triton()` names anything this Triton lacks that msltrans needs.
"""

import triton  # noqa: F401 - see above

from msltrans._triton_compat import check_triton

check_triton()  # a Triton that lacks a needed pass or binding: say so at import
