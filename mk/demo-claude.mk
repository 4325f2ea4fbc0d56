# `make demo-claude`: Baton under the real Claude Code 2.1.328 (installed by the claude-code
# target, mk/claude.mk), its MODEL SCRIPTED on loopback (tests/agents/scripted_model.py): three
# edits reviewed in an editor over LSP, a session SIGKILLed mid-Edit, a new session handed the
# brief. Every step checked; non-zero exit if one fails. DEMO_CLAUDE_ARGS=--keep keeps its folder.
DEMO_CLAUDE_ARGS ?=

.PHONY: demo-claude

demo-claude: $(STAMP) claude-code
	@$(BIN)/python -m tests.agents.demo_claude $(DEMO_CLAUDE_ARGS)
