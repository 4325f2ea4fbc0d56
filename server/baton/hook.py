"""`python -S …/baton/hook.py claude-code`: the command `baton init` writes into an agent
product's hooks. A script, not `-m baton`: with `-S` Python starts without site-packages
(a few ms a hook, twice per tool call), so this file puts its own package's folder on the
path, and the hook client (adapters/daemon/hook_client.py) imports only the standard library.

It goes to the hook client straight, not through `baton.launch` (one module and
`__future__` fewer: ~0.5 ms a hook), and the client ends the process itself once the
daemon has answered (docs/performance.md, section 10)."""

import os
import sys

if __name__ == "__main__":
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    from baton.adapters.daemon.hook_client import main as hook

    code = hook(["hook", *sys.argv[1:]], exit_when_answered=True)
    if code is None:  # not a hook event (`--help`, a usage error): the whole command line
        from baton.launch import main

        code = main(["hook", *sys.argv[1:]])
    sys.exit(code)
