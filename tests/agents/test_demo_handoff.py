"""`make demo-codex` runs to the end and every check in it passes (the demo is its own
test: each step is checked as it is told). About 15 s; slow, like `make demo-claude`'s."""

from __future__ import annotations

import pytest

from tests.agents import claude, codex, demo_handoff


@pytest.mark.slow
def test_the_handoff_demo_passes_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        claude.claude_bin()
        codex.codex_bin()
    except (claude.ClaudeMissing, codex.CodexMissing) as e:
        pytest.fail(str(e), pytrace=False)
    code = demo_handoff.main([])
    out, err = capsys.readouterr()
    assert code == 0, f"{out}\n{err}"
    assert out.splitlines()[1].lstrip().startswith("THE MODELS ARE SCRIPTED"), out
    assert "✘" not in out, out
    assert "✔ one task, hunks from both products, each naming its session" in out
    assert "✔ nothing of the demo is still running" in out
