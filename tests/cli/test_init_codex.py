"""`baton init codex [--trust] [--remove]`: Baton's hooks in the user's Codex configuration
(this machine's, never committed), the project's opt-in in its private .baton/, the user's
own config.toml and hooks.json byte for byte, idempotent, taken out exactly, and the trust
question said plainly. `--trust` against the real Codex: tests/agents/test_codex_setup.py."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

from baton.adapters import codex_setup
from baton.exits import EXIT_REFUSED

from .test_cli import baton

MY_CONFIG = """\
# my Codex configuration — é
model = "gpt-5.5"   # the one I pay for

[[hooks.PreToolUse]]
matcher = "Bash"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "/usr/local/bin/my-guard"

[hooks.state."/somewhere/config.toml:pre_tool_use:0:0"]
trusted_hash = "sha256:0000"

[projects."/home/me/other"]
trust_level = "trusted"
# no newline at the end"""
MY_HOOKS = '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/bin/true"}]}]}}\n'


def homes(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    root, home = tmp_path / "proj", tmp_path / "codex-home"
    root.mkdir()
    home.mkdir()
    (home / "config.toml").write_text(MY_CONFIG)
    (home / "hooks.json").write_text(MY_HOOKS)
    return root, home, {"CODEX_HOME": str(home)}


def test_init_adds_one_block_is_idempotent_and_remove_restores_every_byte(
    tmp_path: Path,
) -> None:
    root, home, env = homes(tmp_path)
    first = baton(root, "init", "codex", env=env).stdout
    assert "config.toml: Baton's hooks" in first and "this project recorded" in first
    # Trust is the user's: what it needs, the command, and what happens otherwise.
    assert "`baton init codex --trust`" in first
    assert "Codex runs here without Baton" in first and "silently" in first
    text = (home / "config.toml").read_text()
    assert text.startswith(MY_CONFIG + "\n")  # the user's bytes, then Baton's block
    hooks = tomllib.loads(text)["hooks"]
    mine = hooks["PreToolUse"][0]
    assert mine["hooks"][0]["command"] == "/usr/local/bin/my-guard"  # still first: its trust
    ours = hooks["PreToolUse"][1]["hooks"][0]
    assert ours["command"] == codex_setup.hook_command()
    assert ours["command"].startswith(sys.executable)  # absolute: Codex needs it
    assert os.path.isabs(ours["command"].split()[2])
    assert set(hooks) - {"state"} == set(codex_setup.EVENTS)
    assert hooks["SessionEnd"][0]["hooks"][0]["timeout"] == 3  # Codex clamps it to 3 s
    assert (home / "hooks.json").read_text() == MY_HOOKS
    assert (root / ".baton" / "codex.json").exists()
    assert list(root.iterdir()) == [root / ".baton"]  # nothing to commit in the project

    again = baton(root, "init", "codex", env=env).stdout
    assert again.startswith("nothing to change")
    assert (home / "config.toml").read_text() == text

    removed = baton(root, "init", "codex", "--remove", env=env).stdout
    assert "Baton's hooks removed" in removed and "no longer recorded" in removed
    assert (home / "config.toml").read_bytes() == MY_CONFIG.encode()
    assert (home / "hooks.json").read_bytes() == MY_HOOKS.encode()
    assert not (root / ".baton" / "codex.json").exists()
    assert baton(root, "init", "codex", "--remove", env=env).stdout.startswith("nothing")


def test_remove_in_one_project_leaves_the_hooks_for_the_others(tmp_path: Path) -> None:
    """Baton's hooks are the user's, serving every project that opted in: `--remove` in one
    of them must not silently stop the others; the last one out takes them out, byte for
    byte. A project deleted since holds nothing."""
    first, home, env = homes(tmp_path)
    second, gone = tmp_path / "second", tmp_path / "gone"
    for root in (second, gone):
        root.mkdir()
    for root in (first, second, gone):
        baton(root, "init", "codex", env=env)
    block = (home / "config.toml").read_text()
    (gone / ".baton" / "codex.json").unlink()  # as `rm -rf` would, more or less

    out = baton(first, "init", "codex", "--remove", env=env).stdout
    assert "Baton's hooks kept: 1 other project(s) still record under Codex" in out
    assert str(second.resolve()) in out and str(gone) not in out
    assert (home / "config.toml").read_text() == block  # the second project still records
    assert not (first / ".baton" / "codex.json").exists()
    assert (second / ".baton" / "codex.json").exists()

    out = baton(second, "init", "codex", "--remove", env=env).stdout
    assert "Baton's hooks removed" in out
    assert (home / "config.toml").read_bytes() == MY_CONFIG.encode()
    assert sorted(p.name for p in home.iterdir()) == ["config.toml", "hooks.json"]


def test_without_a_config_remove_leaves_none(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "fresh-home"
    root.mkdir()
    env = {"CODEX_HOME": str(home)}
    baton(root, "init", "codex", env=env)
    assert (home / "config.toml").read_text().startswith("\n# >>> baton init codex")
    baton(root, "init", "codex", "--remove", env=env)
    assert not (home / "config.toml").exists()


def test_a_config_baton_cannot_extend_changes_nothing(tmp_path: Path) -> None:
    root, home, env = homes(tmp_path)
    (home / "config.toml").write_text("[hooks]\nStop = [{hooks = []}]\n")  # an inline array
    done = baton(root, "init", "codex", env=env, code=EXIT_REFUSED)
    assert "cannot be added" in done.stderr and "nothing changed" in done.stderr
    assert (home / "config.toml").read_text() == "[hooks]\nStop = [{hooks = []}]\n"
    (home / "config.toml").write_text("model = \n")
    done = baton(root, "init", "codex", env=env, code=EXIT_REFUSED)
    assert "not valid TOML" in done.stderr


def test_trust_without_codex_says_how_and_trusts_nothing(tmp_path: Path) -> None:
    root, home, env = homes(tmp_path)
    env["PATH"] = str(tmp_path / "empty")
    done = baton(root, "init", "codex", "--trust", env=env, code=EXIT_REFUSED)
    assert "--codex PATH" in done.stderr
    assert "trusted_hash" not in (home / "config.toml").read_text().split(codex_setup.BEGIN)[1]
    assert baton(root, "init", "codex", "--gate", "x/**", env=env, code=EXIT_REFUSED).stderr


def test_the_hash_is_codex_formula() -> None:
    """Golden: the currentHash the real 0.171.0 reported (`codex app-server` hooks/list) for
    these two entries of a hooks.json: a matcher and Codex's default timeout (600 s), and
    no matcher with a timeout of 10 s."""
    command = "/work/wt-i25-codex/.venv/bin/python /tmp/i25probe/hook.py"
    group: dict[str, object] = {
        "matcher": "apply_patch|Bash",
        "hooks": [{"type": "command", "command": command}],
    }
    assert codex_setup.trust_hash("PreToolUse", group, {"type": "command", "command": command}) == (
        "sha256:b638c14e1a866195ed1ad614da4faf2e01f57973ee34297222a49c84d43acf86"
    )
    handler = {"type": "command", "command": command, "timeout": 10}
    assert codex_setup.trust_hash("SessionStart", {"hooks": [handler]}, handler) == (
        "sha256:1bcf318dd71240d9af57555dbdc7276837886164944908d5a470da7d5404e6d3"
    )


def test_trust_never_overrides_the_users_own_entry_for_the_same_key(tmp_path: Path) -> None:
    """A `[hooks.state."…"]` of the user's for the key Baton's hook takes (trusted by hand
    once, under another hash): `--trust` changes nothing and says why."""
    root, home, env = homes(tmp_path)
    key = f"{home / 'config.toml'}:pre_tool_use:1:0"  # after the user's own PreToolUse
    mine = MY_CONFIG + f'\n[hooks.state."{key}"]\ntrusted_hash = "sha256:stale"\n'
    (home / "config.toml").write_text(mine)
    done = baton(
        root, "init", "codex", "--trust", "--codex", "/nonexistent", env=env, code=EXIT_REFUSED
    )
    assert "your own" in done.stderr and "nothing trusted" in done.stderr
    text = (home / "config.toml").read_text()
    assert text.startswith(mine) and "sha256:stale" in text
    assert text.count("trusted_hash") == mine.count("trusted_hash")  # none of Baton's
