"""A hunk's stored text, read from the workspace's store: its lines before and after, and
the developer's edited version when there is one. The folded state holds only the blobs'
keys, so every face that shows or writes a hunk reads its text here."""

from __future__ import annotations

import json

from baton.core.hunks import Lines
from baton.core.state import HunkBody, HunkState

from .workspace import Workspace


async def hunk_body(ws: Workspace, hunk: HunkState) -> HunkBody:
    return HunkBody.model_validate_json(await ws.store.get_blob(hunk.body))


async def new_lines_of(ws: Workspace, hunk: HunkState, body: HunkBody) -> Lines:
    """What the hunk puts in the file: the developer's edited version if there is one."""
    if hunk.edited is None:
        return tuple(body.new)
    return tuple(json.loads(await ws.store.get_blob(hunk.edited)))
