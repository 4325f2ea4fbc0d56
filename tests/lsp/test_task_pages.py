"""`baton/task` in pages (`limit`, `after`): the pages of a task list each of its live
hunks once, in order; a cursor names a position, so reviews and new proposals between two
pages neither repeat nor skip a hunk that was there; bad paging params are InvalidParams
and the server goes on; without them the answer is the whole task, as before pages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities

from baton.api.worker import Task, Worker
from baton.lsp import protocol as p
from tests.pg import BOTH_BACKENDS

from .conftest import Editor, start_editor, stop_editor

pytestmark = BOTH_BACKENDS

FILES = ("a.py", "b.py", "c.py")
TEXT = "".join(f"def f{n}():\n    return {n}\n" + "\n" * 8 for n in range(1, 10))
"""Functions ten lines apart: a change to each is a hunk of its own."""
CHANGED = (2, 4, 6, 8)
"""The functions each file's proposal changes: four hunks per file, twelve in all."""


def changed(functions: tuple[int, ...], value: int = 0) -> str:
    text = TEXT
    for n in functions:
        text = text.replace(f"return {n}\n", f"return {n * 10 + value}\n")
    return text


@dataclass
class Agent:
    root: Path
    task: Task


@pytest.fixture
async def agent(tmp_path: Path, store_backend: str) -> AsyncIterator[Agent]:
    """A task with four pending hunks in each of three files, its agent still at work."""
    root = tmp_path / "ws"
    root.mkdir()
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Pages", "change four functions per file", task_id="pages")
        for name in FILES:
            (root / name).write_text(TEXT)
            await task.read(name)
            await task.propose(name, changed(CHANGED))
        yield Agent(root, task)


@pytest.fixture
async def editor(agent: Agent) -> AsyncIterator[Editor]:
    ed = await start_editor(agent.root, client_capabilities("visual-studio-code"))
    yield ed
    await stop_editor(ed)


async def task(editor: Editor, **params: Any) -> dict[str, Any]:
    answer: dict[str, Any] = p.plain(await editor.raw(p.TASK, {"taskId": "pages", **params}))
    return answer


async def pages(
    editor: Editor, limit: int, after: str | None = None, **params: Any
) -> list[dict[str, Any]]:
    """The pages from `after` (None: the first) to the last."""
    out = []
    while True:
        page = await task(editor, limit=limit, **({"after": after} if after else {}), **params)
        assert len(page["hunks"]) <= limit
        out.append(page)
        after = page["next"]
        if after is None:
            return out


def ids(answer: dict[str, Any]) -> list[str]:
    return [h["id"] for h in answer["hunks"]]


def key(hunk: dict[str, Any]) -> tuple[str, int, str]:
    """The order of pages (the hunks here are where they were proposed: line = base line)."""
    return (hunk["path"], hunk["line"], hunk["id"])


async def test_without_paging_params_the_answer_is_the_whole_task(editor: Editor) -> None:
    whole = await task(editor)
    assert set(whole) == {"version", "task", "hunks"}
    assert [(h["path"], h["line"]) for h in whole["hunks"]] == [
        (name, n * 10 - 9) for name in FILES for n in CHANGED
    ]


@pytest.mark.parametrize("limit", [1, 5, 12, 13, p.MAX_PAGE])
async def test_pages_list_every_live_hunk_once_in_order(editor: Editor, limit: int) -> None:
    whole = await task(editor)
    got = await pages(editor, limit)
    assert [h for page in got for h in page["hunks"]] == whole["hunks"]
    assert {page["total"] for page in got} == {12}
    assert all(page["task"] == whole["task"] for page in got)
    assert len(got) == -(-12 // limit)  # a full last page says there is no more
    assert all(page["version"] == p.PROTOCOL_VERSION for page in got)


async def test_a_cursor_names_a_position_across_reviews_and_proposals(
    editor: Editor, agent: Agent
) -> None:
    first = await task(editor, limit=5)  # a.py's four and b.py's first
    whole = ids(await task(editor))
    assert ids(first) == whole[:5]
    # Between two pages: a hunk of the first page and one of the next are rejected; the
    # agent adds a hunk (f3) to a.py, behind the cursor, and replaces c.py's four, ahead
    # of it, with five (new values, and f3).
    await editor.command(p.REJECT, {"hunkId": whole[0], "taskId": "pages"})
    await editor.command(p.REJECT, {"hunkId": whole[6], "taskId": "pages"})
    await agent.task.propose("a.py", changed((2, 3, *CHANGED[1:])))
    await agent.task.propose("c.py", changed((2, 3, *CHANGED[1:]), value=1))
    rest = [h for page in await pages(editor, 5, first["next"]) for h in page["hunks"]]
    now = (await task(editor))["hunks"]
    assert len(now) == 14  # 12, a.py's f3 and c.py's f3; c.py's first four replaced
    cursor = key(first["hunks"][-1])
    assert rest == [h for h in now if key(h) > cursor]  # none twice, none skipped
    assert {h["id"]: h["status"] for h in rest}[whole[6]] == "rejected"
    assert not {h["id"] for h in rest} & set(whole[10:])  # c.py's replaced ones are gone
    assert (await task(editor, after=p.encode_cursor(cursor)))["total"] == 14


async def test_pages_of_some_statuses(editor: Editor) -> None:
    whole = ids(await task(editor))
    for hunk_id in (whole[1], whole[9], whole[5]):
        await editor.command(p.REJECT, {"hunkId": hunk_id, "taskId": "pages"})
    rejected = await pages(editor, 2, None, status=["rejected"])
    assert [h["id"] for page in rejected for h in page["hunks"]] == [whole[1], whole[5], whole[9]]
    assert {page["total"] for page in rejected} == {3}
    both = await task(editor, status=["rejected", "pending"])  # `status` alone: pages of 100
    assert ids(both) == whole
    assert (both["next"], both["total"]) == (None, 12)
    assert (await task(editor, status=["accepted"]))["hunks"] == []


async def test_an_unknown_param_says_extra_forbidden(editor: Editor) -> None:
    """What a server before pages answers to `limit`: the extension reads whole tasks when
    it sees this word (the extension's task pages, `refusesPages`)."""
    with pytest.raises(JsonRpcException) as caught:
        await task(editor, cursor="x")
    assert caught.value.code == -32602
    assert "extra_forbidden" in str(caught.value.message)


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": -1},
        {"limit": p.MAX_PAGE + 1},
        {"limit": 10**12},
        {"limit": "ten"},
        {"limit": True},
        {"after": "not a cursor"},
        {"after": "[1, 2, 3]"},
        {"after": '["a.py", 1]'},
        {"after": '["a.py", true, "x"]'},
        {"after": 5},
        {"page": 1},
        {"status": []},
        {"status": ["superseded"]},
        {"status": ["nope"]},
        {"status": "pending"},
    ],
)
async def test_bad_paging_params_are_invalid_params(editor: Editor, params: dict[str, Any]) -> None:
    with pytest.raises(JsonRpcException) as caught:
        await task(editor, **params)
    assert caught.value.code == -32602, caught.value
    assert not (caught.value.data or {}).get("traceback")
    assert len((await task(editor, limit=3))["hunks"]) == 3  # and the server goes on
