"""The files in a workspace's `.baton/` that say an agent product was set up there.

Standard library only, under everything: the lean hook client reads the mark on every
Codex hook, before anything of Baton's is imported, and the workspace layer reads it to
tell who ran here unrecorded; both take the name from here."""

CODEX_MARK = "codex.json"
"""`baton init codex` set this project up. Codex's hooks are the user's (CODEX_HOME), run
in every project: without this file they do nothing."""
