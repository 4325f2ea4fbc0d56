"""The bench's PostgreSQL phase runs (bench/pg.py), at toy sizes: every part of it —
worker processes of the three systems, a takeover after SIGKILL, commit → diagnostic on
both stores — and its tables. Timings are never judged here: only that it ran."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests import pg

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(pg.find_bin() is None, reason="PostgreSQL's initdb/pg_ctl not found"),
]


def test_the_pg_phase_runs_at_toy_sizes(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.checkpoint.postgres", reason="the bench extra")
    from bench import pg as phase

    result = asyncio.run(
        phase.run(
            tmp_path,
            steps=5,
            workers=(1, 2),
            takeover_count=2,
            ttl=0.3,
            lsp_files=2,
            lsp_hunks=2,
            lsp_ops=10,
            lsp_commits=2,
        )
    )
    for n in (1, 2):
        for system in phase.SYSTEMS:
            assert result.levels[n][system].ops == 5 * n
        assert result.levels[n]["baton (listened)"].wakes >= 1  # the editor was woken
    assert len(result.takeover.to_write_ms) == 2
    assert all(v >= 0 for v in result.takeover.to_claim_ms)
    assert {k: len(v) for k, v in result.commits.items()} == {"postgres": 2, "sqlite": 2}
    assert len(result.tables) == 4
    assert result.as_dict()["appends"]["2"]["baton"]["ops"] == 10
