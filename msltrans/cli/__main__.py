"""`python -m msltrans.cli`: the same as the `msltrans` command."""

import sys

from msltrans.cli.main import main

sys.exit(main())
