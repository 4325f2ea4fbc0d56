"""`make demo-claude` runs to the end and every check in it passes (the demo is its own
test: each step is checked as it is told). About 15 s; slow, like the `make demo` test."""

from __future__ import annotations

import pytest

from tests.agents import claude, demo_claude


@pytest.mark.slow
def test_the_claude_code_demo_passes_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        claude.claude_bin()
    except claude.ClaudeMissing as e:
        pytest.fail(str(e), pytrace=False)
    code = demo_claude.main([])
    out, err = capsys.readouterr()
    assert code == 0, f"{out}\n{err}"
    assert out.splitlines()[1].lstrip().startswith("THE MODEL IS SCRIPTED"), out
    assert "✘" not in out, out
    assert "✔ nothing of the demo is still running" in out
