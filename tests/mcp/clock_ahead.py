"""`baton mcp` whose store clock runs ahead of the real one: `python clock_ahead.py
SECONDS ROOT TTL`.

The same server as `python -m baton mcp -w ROOT --ttl TTL` (`run_stdio`), but leases are
written and judged SECONDS in the future. So the lease of a server killed a moment ago
has already expired for it, and a takeover test claims at once instead of sleeping
through a real TTL: the store's clock is the only thing that differs.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from baton.mcp_server import run_stdio


def main(argv: list[str]) -> int:
    seconds, root, ttl = float(argv[0]), Path(argv[1]), float(argv[2])
    return run_stdio(root, None, ttl, clock=lambda: time.time() + seconds)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
