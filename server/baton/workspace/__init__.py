"""A workspace: its root, its store and the folded state of its tasks, and what its log says
of the past (superseded hunks, each file's writes)."""
