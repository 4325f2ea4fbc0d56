"""Running Baton for a team: moving a folder's SQLite workspace into PostgreSQL."""
