# Every target sets itself up: on a fresh machine `make demo` and `make test` are enough.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint bench clean editors vscode

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

# Real editors the tests drive (tests/editors/): Neovim from Debian, installed if missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
editors:
	@command -v nvim >/dev/null || ( \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq neovim >/dev/null )

test: $(STAMP) lint editors vscode
	$(BIN)/python -m pytest

# The VS Code extension: type check, unit tests (node --test), and vscode-client/baton.vsix.
# npm ci runs again only when the lock file changes.
VSCODE := vscode-client
$(VSCODE)/node_modules/.installed: $(VSCODE)/package.json $(VSCODE)/package-lock.json
	cd $(VSCODE) && npm ci --no-audit --no-fund
	touch $@

vscode: $(VSCODE)/node_modules/.installed
	cd $(VSCODE) && npm run check && npm test && npm run package

# Inner loop: everything but the slow crash matrix.
test-fast: $(STAMP) editors
	$(BIN)/python -m pytest -m 'not slow' -x -q

lint: $(STAMP)
	$(BIN)/ruff check server tests bench
	$(BIN)/ruff format --check server tests bench
	$(BIN)/mypy

bench: $(VENV)/.bench
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
