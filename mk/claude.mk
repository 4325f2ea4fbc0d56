# Claude Code, the real CLI the agent-adapter tests drive (tests/agents/), headless against the
# project's scripted model on loopback (tests/agents/scripted_model.py). Installed once from npm
# into .tools/claude-code/; the stamp names the version, so changing it reinstalls.
CLAUDE_VERSION := 2.1.328
CLAUDE_DIR := .tools/claude-code
CLAUDE_BIN := $(abspath $(CLAUDE_DIR))/node_modules/.bin/claude
CLAUDE_STAMP := $(CLAUDE_DIR)/.installed-$(CLAUDE_VERSION)

.PHONY: claude-code

$(CLAUDE_STAMP):
	rm -rf $(CLAUDE_DIR) && mkdir -p $(CLAUDE_DIR)
	cd $(CLAUDE_DIR) && echo '{"private": true}' >package.json && \
	  npm install --no-audit --no-fund @anthropic-ai/claude-code@$(CLAUDE_VERSION)
	$(CLAUDE_BIN) --version
	touch $@

claude-code: $(CLAUDE_STAMP)

test: claude-code

# The VS Code review test (vscode-client/e2e/run.mjs) reviews what a real Claude Code run
# wrote, and runs the next turn after the review (vscode-client/e2e/agent.py claude, next-turn).
vscode-e2e vscode-screenshots: claude-code
