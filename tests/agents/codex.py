"""Run the real Codex CLI (installed by `make codex`) headless in a workspace folder, against
the scripted Responses-API model on loopback (scripted_responses.py).

    with ScriptedResponses(script) as model:
        home = setup(workspace, model)           # CODEX_HOME with the loopback provider
        done = run(workspace, "do it", home)
        assert done.returncode == 0, done.stderr

Nothing here mocks Codex: the binary, its tools, sandbox, hooks and rollout files are the
product. Its HOME and CODEX_HOME are folders of the test's, never the real ones; `resume`
needs the same CODEX_HOME, so every run for one workspace uses the one `setup` made.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .scripted_responses import ScriptedResponses

REPO = Path(__file__).resolve().parents[2]
VERSION = "0.171.0"
# mk/codex.mk installs here; CODEX_BIN there names the same file.
INSTALL_DIR = REPO / ".tools" / "codex"
BIN = INSTALL_DIR / "node_modules" / ".bin" / "codex"
STAMP = INSTALL_DIR / f".installed-{VERSION}"
MODEL = "gpt-5.5"
"""A slug of Codex's bundled catalog: with an unknown one Codex offers no apply_patch tool."""


class CodexMissing(RuntimeError):
    """The binary is not installed: the message is the one line to show."""


def codex_bin() -> Path:
    if not (BIN.exists() and STAMP.exists()):
        raise CodexMissing(f"Codex {VERSION} is not installed in {INSTALL_DIR}: run `make codex`")
    return BIN


def setup(workspace: Path, model: ScriptedResponses) -> Path:
    """A HOME beside the workspace whose CODEX_HOME/config.toml points Codex at `model`;
    returns that CODEX_HOME."""
    home = workspace.parent / f"{workspace.name}.home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model_provider = "scripted"\nmodel = "{MODEL}"\n\n'
        "[model_providers.scripted]\n"
        'name = "scripted"\n'
        f'base_url = "{model.url}"\n'
        'env_key = "SCRIPTED_KEY"\n'
        'wire_api = "responses"\n'
    )
    return codex_home


def environment(codex_home: Path) -> dict[str, str]:
    """Only PATH and the locale from the caller's environment: no OPENAI_* or CODEX_*
    setting of the machine leaks in."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
    env.update({"HOME": str(codex_home.parent), "CODEX_HOME": str(codex_home), "SCRIPTED_KEY": "x"})
    return env


@dataclass(frozen=True)
class CodexRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def session_id(self) -> str:
        found = re.search(r"session id: (\S+)", self.stderr)
        assert found, self.stderr
        return found.group(1)


def run(
    workspace: Path,
    prompt: str,
    codex_home: Path,
    *,
    resume: str | None = None,
    args: Sequence[str] = (),
    timeout: float = 300,
) -> CodexRun:
    """`codex exec` (or `codex exec resume SESSION`) in `workspace`, to its end. The sandbox
    lets it write the workspace (exec's default is read-only); hooks run only if trusted."""
    # exec's own options come before `resume`, which takes the session and the prompt
    argv = [str(codex_bin()), "exec", "--skip-git-repo-check", "--sandbox", "workspace-write"]
    argv += [*args, *(["resume", resume] if resume is not None else []), prompt]
    done = subprocess.run(
        argv,
        cwd=workspace,
        env=environment(codex_home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return CodexRun(done.returncode, done.stdout, done.stderr)
