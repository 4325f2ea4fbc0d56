"""Bringing a copy of the files to a task's exact state: its base revision, then every
write the task made, once."""
