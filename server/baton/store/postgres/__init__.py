"""The PostgreSQL backend: one database for a fleet. Importing this package imports no
driver: only its modules do, so the SQLite path never loads psycopg."""
