"""Which database a workspace's store lives in: the one setting that picks the backend.

SQLite needs no setting at all: `<root>/.baton/baton.db` (or BATON_DB). A team's fleet
shares one PostgreSQL database instead, named by a URL, and each workspace in it by an id
that every checkout of that workspace uses on every host (the developer's laptop, each
worker's container) — so the id is never guessed from a path, which differs per host:

    # <root>/.baton/config (TOML)
    database = "postgresql://baton@db.internal/baton"
    workspace = "acme/webapp"

The environment wins over the file (`BATON_DATABASE_URL`, `BATON_WORKSPACE`), so a
container can be pointed elsewhere without editing the checkout. The file is read only
when it exists, and `tomllib` is imported only then: a one-shot command on the default
SQLite path pays nothing for this module beyond one `stat`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.core.limits import InvalidInput

URL_ENV = "BATON_DATABASE_URL"
WORKSPACE_ENV = "BATON_WORKSPACE"
DB_ENV = "BATON_DB"
CONFIG_FILE = "config"
"""`<root>/.baton/config`."""
KEYS = ("database", "workspace")
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
WORKSPACE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}")
"""A workspace id: what a team would name a repository (`acme/webapp`, `team-x:api`)."""


class ConfigError(InvalidInput):
    """A setting that cannot be used; its message is the one line the user sees."""


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """Where one workspace's store is: a SQLite file, or a workspace id in PostgreSQL."""

    root: Path
    url: str | None = None
    """`postgresql://…` when the backend is PostgreSQL; None for SQLite."""
    workspace: str | None = None
    """The workspace's id in that database (PostgreSQL only)."""
    sqlite_path: Path | None = None

    @property
    def is_postgres(self) -> bool:
        return self.url is not None

    def describe(self) -> str:
        """Where the store is, for messages: a path, or the database and id (no password)."""
        if self.url is None:
            return str(self.sqlite_path)
        return f"workspace {self.workspace!r} in {redact(self.url)}"


def config_path(root: Path) -> Path:
    return root / ".baton" / CONFIG_FILE


def read_file(root: Path) -> dict[str, str]:
    """The settings of `<root>/.baton/config`, validated; {} when there is none."""
    path = config_path(root)
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError as e:
        raise ConfigError(f"{path}: cannot read it: {e.strerror or e}") from None
    import tomllib  # only when there is a file to read

    try:
        data: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown setting {unknown[0]!r} (known: {', '.join(KEYS)})")
    settings: dict[str, str] = {}
    for key, value in data.items():
        if not isinstance(value, str):
            raise ConfigError(f"{path}: {key} must be a string, not {type(value).__name__}")
        settings[key] = value
    return settings


def load(root: Path) -> StoreConfig:
    """The store setting for the workspace at `root`: environment, then the file, then
    the SQLite default. Raises ConfigError with one clear line."""
    settings = read_file(root)
    url = os.environ.get(URL_ENV) or settings.get("database") or None
    workspace = os.environ.get(WORKSPACE_ENV) or settings.get("workspace") or None
    if url is None:
        override = os.environ.get(DB_ENV)
        path = Path(override) if override else root / ".baton" / "baton.db"
        return StoreConfig(root, sqlite_path=path)
    if not url.startswith(POSTGRES_SCHEMES):
        where = URL_ENV if os.environ.get(URL_ENV) else str(config_path(root))
        raise ConfigError(
            f"{where}: database {redact(url)!r} is not a postgresql:// URL "
            "(leave it unset for the SQLite file in .baton/)"
        )
    if workspace is None:
        raise ConfigError(
            f"the database is PostgreSQL ({redact(url)}) but no workspace id is set: "
            f'add workspace = "team/repo" to {config_path(root)} or set {WORKSPACE_ENV} '
            "(the same id on every host that works on this workspace)"
        )
    if not WORKSPACE_ID.fullmatch(workspace):
        raise ConfigError(
            f"workspace id {workspace[:140]!r} is not valid: letters, digits and . _ : / @ -, "
            "at most 128, starting with a letter or digit"
        )
    return StoreConfig(root, url=url, workspace=workspace)


def redact(url: str) -> str:
    """The URL without its password (messages and logs never show one)."""
    return re.sub(r"^([a-z]+://[^:/@]*):[^@]*@", r"\1:***@", url)
