# Baton's hooks under the real Claude Code (bench/hooks.py; docs/performance.md, "Hooks
# under Claude Code"): the hooks phase of `python -m bench` alone, ~3–4 minutes on 2 cores.
# `make bench` runs it too, so it needs the Claude Code that mk/claude.mk installs.
.PHONY: bench-hooks

bench-hooks: $(VENV)/.bench claude-code
	$(BIN)/python -m bench --only hooks

bench: claude-code
