"""Which copy of the files this process works in: a checkout's stable identity.

The store holds a task's review state once, for everyone; its files live in checkouts —
the developer's folder, each worker's container — and a write happens in one of them. So
every effect and landing records the checkout it wrote in, and "applied" or "already in
the file" is judged per checkout (docs/checkouts.md).

The identity is a random id kept in `<root>/.baton/checkout` with the host and the root
it was minted for. A folder copied elsewhere, or a container image started on another
host, carries that file along: its host or root no longer match, so a new id is minted —
the copy's files are its own from then on — unless the database moved with it (a copied
workspace, log and files together: nobody else shares that log, so its writes are still
the copy's). Only the host and the path are compared, not
an inode or a boot id that may change under a folder that did not move (a checkout that
took itself for a stranger would stop recovering its own half-done writes).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path

FILE = "checkout"
"""Under `<root>/.baton/`."""


@dataclass(frozen=True, slots=True)
class Checkout:
    id: str
    host: str
    root: str
    original: bool
    """This folder holds the workspace's own database (`.baton/baton.db`, no BATON_DB
    elsewhere), or held it before `baton migrate` moved it to PostgreSQL (the store names
    it): the ops written before checkouts were told apart (no checkout field) are its
    writes."""

    @property
    def label(self) -> str:
        """For people: where the files are."""
        return f"{self.host}:{self.root}"

    def holds(self, recorded: str | None) -> bool:
        """Whether a write recorded with checkout `recorded` happened in these files."""
        return recorded == self.id or (recorded is None and self.original)


def identify(root: Path, database: Path | None, owner: str | None = None) -> Checkout:
    """The checkout at `root`, minting its id on first use or when the file was carried
    here from another host or folder. `database` is the store's file, if it has one; a
    database server (PostgreSQL) is no folder's own, so no checkout there is the original
    and a container image carrying `.baton/checkout` to another host gets a new id —
    except `owner`, the checkout the server names as the original (the folder whose
    SQLite file `baton migrate` moved there, still at its host and path)."""
    root = root.resolve()
    host = socket.gethostname()
    original = database is not None and (
        database.resolve() == (root / ".baton" / "baton.db").resolve()
    )
    path = root / ".baton" / FILE
    recorded = _read(path)
    same_place = recorded is not None and (recorded.get("host"), recorded.get("root")) == (
        host,
        str(root),
    )
    if recorded is not None and (same_place or original):
        # Moved with its own database (a copied workspace): files and log moved together,
        # and no other copy shares that log, so the writes it records are still these.
        kept = str(recorded["id"])
        return Checkout(kept, host, str(root), original or (same_place and kept == owner))
    minted = Checkout(f"c-{secrets.token_hex(6)}", host, str(root), original)
    try:
        _write(path, minted, replace=recorded is not None)
    except OSError:  # a read-only folder: a look (`baton status`) still works; a write
        return minted  # of a file would fail there anyway
    winner = _read(path)  # two processes minting at once: the one file in place wins
    return Checkout(str(winner["id"]), host, str(root), original) if winner else minted


def _read(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("id"), str) else None


def _write(path: Path, checkout: Checkout, *, replace: bool) -> None:
    """Whole or not at all (a temp file linked or renamed into place). A first mint links,
    which fails if another process minted meanwhile: theirs stays, and both use it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{FILE}.{os.getpid()}.{secrets.token_hex(3)}")
    body = {"id": checkout.id, "host": checkout.host, "root": checkout.root}
    try:
        tmp.write_text(json.dumps(body) + "\n", "utf-8")
        if replace:
            os.replace(tmp, path)
        else:
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
