"""`python -S …/baton/hook.py claude-code`: the command `baton init` writes into an agent
product's hooks. A script, not `-m baton`: with `-S` Python starts without site-packages
(a few ms a hook, twice per tool call), so this file puts its own package's folder on the
path, and the hook client (adapters/daemon/hook_client.py) imports only the standard library."""

import os
import sys

if __name__ == "__main__":
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    from baton.launch import main

    sys.exit(main(["hook", *sys.argv[1:]]))
