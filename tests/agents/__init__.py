"""Real coding-agent CLIs (Claude Code) driven by the project's scripted model on loopback."""
