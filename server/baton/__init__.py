"""Baton: durable checkpoints and inline review for AI coding agents."""

__version__ = "0.1.0"
