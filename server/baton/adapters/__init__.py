"""Baton under agent products that write files themselves: one thin module per product
turning its hook events into the same calls the CLI, MCP and Python faces make."""
