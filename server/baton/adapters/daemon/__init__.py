"""The per-workspace daemon that keeps hooks and `baton agent` calls cheap, and the lean
clients that hand it their work."""
