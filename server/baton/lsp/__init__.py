"""`baton serve`: the language server that puts an agent's proposals in the editor."""
