"""Latency summaries: percentiles over nanosecond samples, reported in microseconds.

Nearest-rank percentiles on the sorted samples: no interpolation, so p99 of 1,000 samples
is an actual observed latency (the 990th), which is what a user would have waited.
"""

from __future__ import annotations

import gc
import math
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


def percentile(sorted_ns: Sequence[int], q: float) -> float:
    """The q-th percentile (0..100) of already sorted samples, in microseconds."""
    if not sorted_ns:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_ns)))
    return sorted_ns[min(rank, len(sorted_ns)) - 1] / 1_000


def median(values: Sequence[float]) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


@dataclass(frozen=True, slots=True)
class Summary:
    """Throughput from wall time (so per-op overhead outside the timed call counts) and
    latency percentiles from per-op samples."""

    n: int
    ops_per_s: float
    p50_us: float
    p99_us: float
    p999_us: float
    max_us: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def summarize(samples_ns: Sequence[int], wall_ns: int) -> Summary:
    ordered = sorted(samples_ns)
    return Summary(
        n=len(ordered),
        ops_per_s=len(ordered) / (wall_ns / 1e9) if wall_ns else math.nan,
        p50_us=percentile(ordered, 50),
        p99_us=percentile(ordered, 99),
        p999_us=percentile(ordered, 99.9),
        max_us=ordered[-1] / 1_000 if ordered else math.nan,
    )


def run_waiting(argv: list[str], stdin: bytes, timeout: float, **popen: Any) -> int:
    """Run a process to its end, as Claude Code runs a hook, and learn of its exit at once:
    its exit code.

    Not `subprocess.run(..., timeout=...)`: with a timeout, Popen.wait polls, sleeping 1,
    2, 4, 8, 16 ms … between looks, so a hook that ended at 9 ms was seen at ~15.6 ms, one
    that ended at 16 ms at ~31.5 ms — the "16 ms scheduler tick" and the bimodal p50 (32 or
    64 ms a pair) of earlier readings (docs/performance.md, section 10). Claude Code hears
    of a hook's exit when it happens (SIGCHLD). So this waits blocking, and a timer kills a
    process that hangs past `timeout`."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, **popen)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        proc.communicate(stdin)  # no timeout: a blocking wait
    finally:
        timer.cancel()
    return proc.returncode


def settle() -> None:
    """Collect garbage between phases so one phase's garbage is not paid by the next."""
    gc.collect()
    gc.collect()


def compiled(*others: str) -> None:
    """Write Baton's bytecode before anything is timed (every bench: the flat bench did,
    the language server's did not). An installed Baton runs from the bytecode its
    installer wrote, as pygls and lsprotocol do here; with PYTHONDONTWRITEBYTECODE set
    (the shells of this workplace) an editable checkout would instead compile its ~15k
    lines in every process a bench starts (measured: ~70 ms CPU of each `baton serve`
    start, its share 0.71-0.76x the floor against 0.57-0.61x from bytecode). Written
    even so: compileall writes what it compiles. `others`: other checkouts' source
    folders a bench runs beside this one."""
    import compileall
    from pathlib import Path

    import baton

    for folder in (Path(baton.__file__).parent, *map(Path, others)):
        compileall.compile_dir(folder, quiet=1)
