"""Baton's benchmark suite: `python -m bench` (or `make bench`).

Every comparison runs in ONE process, on ONE disk (a temporary folder under /tmp), with
the systems interleaved where possible, and is reported as a ratio: absolute numbers on a
small, shared, noisy machine move by tens of percent from run to run, ratios much less.
The targets are printed as PASS/MISS for information only; the exit code never depends
on them, so a slow CI box cannot turn a benchmark into a flaky test.
"""
