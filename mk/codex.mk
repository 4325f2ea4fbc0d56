# Codex CLI, the second agent product the adapter tests drive (tests/agents/), headless against
# the project's scripted Responses-API model on loopback (tests/agents/scripted_responses.py).
# Installed once from npm into .tools/codex/; the stamp names the version, so changing it
# reinstalls. The package carries its native binary (~315 MB, musl).
CODEX_VERSION := 0.171.0
CODEX_DIR := .tools/codex
CODEX_BIN := $(abspath $(CODEX_DIR))/node_modules/.bin/codex
CODEX_STAMP := $(CODEX_DIR)/.installed-$(CODEX_VERSION)

.PHONY: codex

$(CODEX_STAMP):
	rm -rf $(CODEX_DIR) && mkdir -p $(CODEX_DIR)
	cd $(CODEX_DIR) && echo '{"private": true}' >package.json && \
	  npm install --no-audit --no-fund @openai/codex@$(CODEX_VERSION)
	$(CODEX_BIN) --version
	touch $@

codex: $(CODEX_STAMP)

test: codex
