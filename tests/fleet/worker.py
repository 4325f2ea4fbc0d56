"""An agent worker on a fleet host: `python -m tests.fleet.worker ROOT --task T …`.

It drives `baton.api.worker.Worker` against the database its environment names
(BATON_DATABASE_URL, BATON_WORKSPACE), in its own checkout folder ROOT, and says on stdout
what the store confirmed, the moment it is confirmed, so the test knows exactly what was
acknowledged (and may therefore never be lost):

    claimed EPOCH
    ok LSN OP_ID N          note N is committed at LSN (op OP_ID)
    applied N PATH          the file proposed at note N is accepted and applied here
    fenced N MESSAGE        StaleEpoch: the task was taken over; it writes nothing more
    finished

Its plan is notes 0 … N-1; every `--files-every`-th note also proposes a new file
`fN.txt`, waits for the developer's decision and applies it. A successor replays the plan
from 0: every op it repeats has the same op id (recorded once), a file already here is
its earlier proposal, already applied. A store that is unreachable (a cut link, a
restarting server) is retried, the same op again, as an agent would.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from baton.api.worker import Task, Worker
from baton.core import keys
from baton.core.ops import ContextText, OpKind
from baton.store import NewOp, StaleEpoch, StoreUnavailable

RETRY_FOR_S = 120.0
T = TypeVar("T")


def say(*words: object) -> None:
    print(*words, flush=True)


def content(n: int) -> str:
    return f"file {n}\n"


def note_op(task: Task, n: int) -> NewOp:
    """What `task.remark("note", …)` records, built here to see its stored lsn."""
    text = f"note {n}"
    return NewOp(
        keys.recorded(task.id, OpKind.CONTEXT_NOTE, (text, None)),
        task.id,
        task.epoch,
        OpKind.CONTEXT_NOTE,
        ContextText(text=text, hunk_id=None, author="agent"),
    )


async def retrying(what: str, job: Callable[[], Awaitable[T]]) -> T:
    """`job()` until the store answers: StoreUnavailable is a network or server outage."""
    deadline = time.monotonic() + RETRY_FOR_S
    while True:
        try:
            return await job()
        except StoreUnavailable as e:
            if time.monotonic() > deadline:
                raise
            say("unavailable", what, str(e).splitlines()[0][:160])
            await asyncio.sleep(0.2)


async def item(task: Task, n: int, files_every: int) -> None:
    op = await retrying(f"note {n}", lambda: task.ws.record(note_op(task, n)))
    say("ok", op.lsn, op.op_id, n)
    if files_every and n % files_every == 0:
        path = f"f{n}.txt"
        proposal = await retrying(path, lambda: task.propose(path, content(n), f"add {path}"))
        await retrying(f"review {path}", lambda: task.wait_for_review(proposal.hunk_ids))
        await retrying(f"apply {path}", lambda: task.apply(proposal.hunk_ids))
        say("applied", n, path)


async def run(args: argparse.Namespace) -> int:
    worker = await Worker.open(Path(args.root), worker_id=args.id, ttl=args.ttl)
    async with worker:
        if args.begin:
            task = await worker.begin("Fleet", task_id=args.task)
        else:
            task = await retrying("claim", lambda: worker.claim(args.task, wait=args.wait))
        say("claimed", task.epoch)
        n = 0
        try:
            for n in range(args.notes):
                await item(task, n, args.files_every)
            if args.finish:
                await task.finish("done")
                say("finished")
        except StaleEpoch as e:
            say("fenced", n, str(e).splitlines()[0])
            return 3
        if args.hold:  # stay alive (holding the lease) until killed
            await asyncio.Event().wait()
    return 0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("--task", required=True)
    p.add_argument("--id", required=True, help="the worker's id")
    p.add_argument("--begin", action="store_true", help="create the task, else claim it")
    p.add_argument("--wait", type=float, default=60.0, help="how long a claim may wait")
    p.add_argument("--ttl", type=float, default=2.0)
    p.add_argument("--notes", type=int, default=1_000_000)
    p.add_argument("--files-every", type=int, default=0)
    p.add_argument("--finish", action="store_true")
    p.add_argument("--hold", action="store_true")
    sys.exit(asyncio.run(run(p.parse_args())))


if __name__ == "__main__":
    main()
