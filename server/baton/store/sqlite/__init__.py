"""The SQLite backend: one WAL file per workspace folder."""
