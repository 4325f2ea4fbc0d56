# What a user installs (issue 12, docs/install.md): the wheel and sdist of the distribution
# baton-review, for `uv tool install` / `pipx install`, and the VS Code extension, all in
# dist/. dist/ is emptied first, so that `uv tool install dist/*.whl` finds one wheel, and so
# are server/*.egg-info: setuptools adds the files an earlier build listed there to the sdist.
# tests/install/ builds the same way and installs the wheel as a tool.
DIST := dist

.PHONY: dist

dist: $(STAMP) vscode
	rm -rf $(DIST) server/*.egg-info
	$(BIN)/python -m build --outdir $(DIST) .
	cp $(VSCODE)/baton.vsix $(DIST)/
	@ls -1 $(DIST)
