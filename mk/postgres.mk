# PostgreSQL, the store's second backend (issue 14): the tests start a private server of
# their own from these binaries (tests/pg.py: initdb in a temporary folder, a unix socket
# and a loopback port, stopped at the end). Installed from Debian if initdb/pg_ctl are
# neither on PATH nor in /usr/lib/postgresql/*/bin. `make test` and `make test-fast` set
# BATON_TEST_POSTGRES=required: PostgreSQL missing there is an error, never a silent skip.
.PHONY: postgres

postgres:
	@{ command -v pg_ctl && command -v initdb; } >/dev/null 2>&1 || \
	  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ( \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq postgresql >/dev/null )

test: postgres
test-fast: postgres
test test-fast: export BATON_TEST_POSTGRES = required
# The bench's pg phase at toy sizes (tests/fleet/test_bench_pg.py) needs the peer's
# package, langgraph-checkpoint-postgres, from the `bench` extra.
test: $(VENV)/.bench
