"""`python -m tests.torture`: the full crash-anywhere run (see runner.py)."""

import sys

from .runner import main

sys.exit(main())
