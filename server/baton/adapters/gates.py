"""Gate mode: paths whose edits an agent's tool may not make directly (`baton init
claude-code --gate 'migrations/**'`). A gated edit is held: recorded as a proposal of the
propose-first kind, the file left as it is until the developer accepts.

The globs live in `.baton/gates.json` (a list), read on each hook: `**` matches any number
of folders, `*` anything but a `/`, as in .gitignore."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from baton.core.limits import InvalidInput

FILE = "gates.json"


def _pattern(glob: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def load(root: Path) -> list[str]:
    try:
        globs = json.loads((root / ".baton" / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [g for g in globs if isinstance(g, str)] if isinstance(globs, list) else []


def gated(root: Path, path: str) -> bool:
    return any(_pattern(g).match(path) for g in load(root))


def save(root: Path, globs: list[str]) -> None:
    for glob in globs:
        if not glob.strip() or glob.startswith("/") or ".." in glob.split("/"):
            raise InvalidInput(f"--gate {glob!r}: give a glob relative to the workspace")
    path = root / ".baton" / FILE
    if not globs:
        path.unlink(missing_ok=True)
        return
    temp = path.with_name(f".{FILE}.{os.getpid()}")
    temp.write_text(json.dumps(sorted(set(globs))) + "\n", encoding="utf-8")
    os.replace(temp, path)
