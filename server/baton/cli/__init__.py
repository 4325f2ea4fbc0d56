"""`baton` on the command line: its grammar, the developer's commands, the agent's commands
and the demo."""
