# `make demo-codex`: one task carried from the real Claude Code 2.1.328 to the real Codex
# 0.171.0 and back (installed by the claude-code and codex targets, mk/claude.mk and
# mk/codex.mk), their MODELS SCRIPTED on loopback (tests/agents/scripted_model.py,
# scripted_responses.py): Claude Code SIGKILLed mid-turn, the developer's review, Codex
# briefed and finishing the task, Claude Code briefed with Codex's work. Every step checked;
# non-zero exit if one fails. A target of its own, not part of `make demo`: that one needs
# no npm install and stays a few seconds. DEMO_CODEX_ARGS=--keep keeps its folder.
DEMO_CODEX_ARGS ?=

.PHONY: demo-codex

demo-codex: $(STAMP) claude-code codex
	@$(BIN)/python -m tests.agents.demo_handoff $(DEMO_CODEX_ARGS)
