"""The operations an agent performs: claim, read, propose, wait, apply, resume, written once
for every face (Python, CLI, MCP, hooks), and the workspace's consistency check."""
