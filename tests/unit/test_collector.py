"""The collector's settings over `baton serve`'s start (baton/lsp/gc_tuning.py): young
collections only while importing, off and frozen while starting, the process's own
thresholds back afterwards. Run in this process, its collector put back as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from baton.lsp import gc_tuning as collector


@pytest.fixture
def own_collector() -> Iterator[None]:
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        (gc.enable if enabled else gc.disable)()


def test_imports_collect_the_youngest_generation_only(own_collector: None) -> None:
    collector.for_imports()
    first, second, third = gc.get_threshold()
    assert first == collector.STARTED_WITH[0]
    assert second >= collector.NEVER and third >= collector.NEVER
    assert gc.isenabled()
    before = gc.get_stats()[1]["collections"]
    garbage = [[] for _ in range(10 * first)]  # enough for several young collections
    for cell in garbage:
        cell.append(cell)  # a cycle each: only a collection frees them
    del garbage
    assert gc.get_stats()[1]["collections"] == before


def test_start_up_holds_then_resumes_as_the_process_started(own_collector: None) -> None:
    collector.for_imports()
    collector.hold()
    assert not gc.isenabled()
    assert gc.get_freeze_count() > 0
    collector.resume()
    assert gc.isenabled()
    assert gc.get_threshold() == collector.STARTED_WITH
