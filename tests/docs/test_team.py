"""docs/team.md's snippets, run against the session's private PostgreSQL server: the
roles and grants as a DBA would type them, the `.baton/config` file, the owner's first
run that makes the tables, and the team's role working through the CLI afterwards. The
page's host name `db.internal` is the test server's address; nothing else is changed."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import psycopg

from tests.pg import PgServer, fresh_workspace

from .runner import REPO

TEAM = REPO / "docs" / "team.md"


def snippets() -> dict[str, str]:
    """The fenced blocks after each `<!-- team: NAME -->` marker."""
    text = TEAM.read_text()
    found = re.findall(r"<!-- team: (\w+) -->\n```\w*\n(.*?)```", text, re.S)
    return dict(found)


def baton(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def commands(console: str) -> list[str]:
    return [line.removeprefix("$ ") for line in console.splitlines() if line.startswith("$ ")]


def test_the_team_page_sets_up_roles_and_a_workspace(pg_server: PgServer, tmp_path: Path) -> None:
    blocks = snippets()
    assert set(blocks) == {"config", "env", "roles", "grants", "owner", "migrate"}
    host = f"127.0.0.1:{pg_server.port}"
    with psycopg.connect(pg_server.admin_url, autocommit=True) as conn:
        for statement in blocks["roles"].split(";"):
            if statement.strip():
                conn.execute(statement.encode())
    baton_db = f"postgresql://postgres@{host}/baton"
    with psycopg.connect(baton_db, autocommit=True) as conn:
        conn.execute(blocks["grants"].encode())

    checkout = tmp_path / "webapp"
    (checkout / ".baton").mkdir(parents=True)
    (checkout / ".baton" / "config").write_text(blocks["config"].replace("db.internal", host))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "PG"))}

    # The team's role before the owner's first run: one line, exit 6, nothing written.
    refused = baton(checkout, env, "agent", "begin", "--title", "early", "--json")
    assert refused.returncode == 6, refused
    assert refused.stderr.count("\n") == 1 and "owns schema baton" in refused.stderr

    (owner,) = commands(blocks["owner"])
    assignment, program, *args = shlex.split(owner)
    name, _, url = assignment.partition("=")
    assert program == "baton"
    first = baton(checkout, {**env, name: url.replace("db.internal", host)}, *args)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["task_id"] == "setup"

    *exports, command = commands(blocks["env"])
    pairs = (e.removeprefix("export ").split("=", 1) for e in exports)
    team_env = {**env, **{k: v.replace("db.internal", host) for k, v in pairs}}
    program, *args = shlex.split(command)
    assert program == "baton"
    begun = baton(checkout, team_env, *args)
    assert begun.returncode == 0, begun.stderr
    assert json.loads(begun.stdout)["epoch"] == 1
    status = baton(checkout, env, "status", "--json")  # the file's setting: the same workspace
    assert status.returncode == 0, status.stderr
    assert {t["task_id"] for t in json.loads(status.stdout)} == {"setup", "parser"}
    assert not (checkout / ".baton" / "baton.db").exists()


def sessions(console: str) -> list[tuple[str, str]]:
    """(command, what the page shows it print) for each `$ ` line of a console block."""
    pairs: list[tuple[str, list[str]]] = []
    for line in console.splitlines():
        if line.startswith("$ "):
            pairs.append((line.removeprefix("$ "), []))
        else:
            pairs[-1][1].append(line)
    return [(command, "\n".join(shown)) for command, shown in pairs]


def test_the_team_page_moves_a_sqlite_workspace(pg_server: PgServer, tmp_path: Path) -> None:
    """The "Moving a workspace to PostgreSQL" session, in a folder whose SQLite workspace
    has the page's task: the page's URL is the test server's, its workspace id a fresh one;
    paths the page elides (`...`) are this folder's."""
    shown_url = "postgresql://baton_team@db.internal/baton"
    ws_id = fresh_workspace()
    root = tmp_path / "webapp"
    root.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "PG"))}
    begun = baton(root, env, "agent", "begin", "--title", "Fix the parser", "--task-id",
                  "parser", "--worker", "w1")  # fmt: skip
    assert begun.returncode == 0, begun.stderr
    for command, shown in sessions(snippets()["migrate"]):
        program, *args = shlex.split(command.replace(shown_url, pg_server.url))
        assert program == "baton"
        args = [ws_id if a == "acme/webapp" else a for a in args]
        done = baton(root, env, *args)
        assert done.returncode == 0, (command, done.stderr)
        printed = (done.stdout + done.stderr).rstrip("\n")
        printed = printed.replace(pg_server.url, shown_url).replace(ws_id, "acme/webapp")
        assert printed.replace(str(root), "...") == shown, command
    assert (root / ".baton" / "baton.db").exists()
    assert f'workspace = "{ws_id}"' in (root / ".baton" / "config").read_text()
