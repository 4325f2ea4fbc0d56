# Every target sets itself up: on a fresh machine `make demo` and `make test` are enough.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed


.PHONY: demo test test-unit test-fast lint bench clean editors vscode torture vscode-e2e test-vscode vscode-screenshots

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

$(VENV)/.bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $(VENV)/.bench

demo: $(STAMP)
	$(BIN)/python -m baton demo

# Real editors the tests drive (tests/editors/): Neovim, and Vim with ALE (an editor
# without workspace/applyEdit), from Debian, installed if missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
editors:
	@command -v nvim >/dev/null && command -v vim >/dev/null && \
	  [ -d /usr/share/vim/vimfiles/pack/dist-bundle/opt/ale ] || ( \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq neovim vim vim-ale >/dev/null )

# The fast tier on every core (a file's tests on one worker, as test-fast), then the slow
# tier alone: the crash matrix and the real agents get the machine to themselves.
test: $(STAMP) lint editors vscode vscode-e2e
	$(BIN)/python -m pytest -m 'not slow' -q -n auto --dist loadfile
	$(BIN)/python -m pytest -m slow -q

# The VS Code extension: type check, unit tests (node --test), and vscode-client/baton.vsix.
# npm ci runs again only when the lock file changes.
VSCODE := vscode-client
$(VSCODE)/node_modules/.installed: $(VSCODE)/package.json $(VSCODE)/package-lock.json
	cd $(VSCODE) && npm ci --no-audit --no-fund
	touch $@

vscode: $(VSCODE)/node_modules/.installed
	cd $(VSCODE) && npm run check && npm run lint && npm test && npm run package

# The extension end to end in VS Code: code-server 4.100.3 (installed once from npm into
# vscode-client/.e2e/, with Chromium and build headers from Debian; see e2e/install.sh) and
# headless Chromium driven by playwright-core, against the real `baton serve` of $(VENV).
# Extension-host tests (Mocha) plus two UI tests on baton.vsix, the second after a real
# Claude Code run (claude-code, mk/claude.mk); `make vscode-screenshots`
# runs the UI tests alone and saves their screenshots in docs/images/. run.mjs kills code-server's process group at the end and
# after E2E_TIMEOUT seconds (450); `timeout` bounds the whole target, install included.
vscode-e2e: $(STAMP) vscode
	cd $(VSCODE) && timeout -k 10 900 sh -c 'sh e2e/install.sh && npm run check:e2e && \
	  npm run build:e2e && BATON_PYTHON=$(abspath $(BIN))/python node e2e/run.mjs'
test-vscode: vscode-e2e
vscode-screenshots: $(STAMP) vscode
	cd $(VSCODE) && timeout -k 10 900 sh -c 'sh e2e/install.sh && \
	  BATON_PYTHON=$(abspath $(BIN))/python E2E_IMAGES=$(abspath docs/images) node e2e/run.mjs ui'

# Tiers. test-unit: the pure core and the store on real SQLite files, in seconds.
# test-fast, the inner loop: everything not marked slow (the crash matrix, torture, fuzz,
# the full demo, installing the wheel, the real Claude Code, network partitions), real
# servers and editors included, a pytest worker per core (pytest-xdist, a file's tests
# on one worker). test: all of it.
test-unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit tests/store -q

test-fast: $(STAMP) editors
	$(BIN)/python -m pytest -m 'not slow' -x -q -n auto --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check server tests bench
	$(BIN)/ruff format --check server tests bench
	$(BIN)/mypy

# Torture (issue 5), two parts that stop by themselves and print a table each:
# crash anywhere — agent, `baton serve` + editor and CLI reviewer on one workspace,
# SIGKILLed at seeded random instants (~9 minutes; reproduce one run with
# $(BIN)/python -m tests.torture --seed SEED --runs 1 --jobs 1) — then contention: four
# agents, the server and the CLI writing at once for three minutes, throughput and p99.
TORTURE_ARGS ?=
CONTENTION_S ?= 180
torture: $(STAMP)
	$(BIN)/python -m tests.torture --keep $(TORTURE_ARGS)
	$(BIN)/python -m tests.torture.contention --seconds $(CONTENTION_S)

bench: $(VENV)/.bench
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# Each tool the tests drive has its own file of targets here (mk/claude.mk, mk/dist.mk …);
# one may add itself to `test` with a rule of prerequisites only (`test: claude-code`).
include $(wildcard mk/*.mk)
