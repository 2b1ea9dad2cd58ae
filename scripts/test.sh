#!/usr/bin/env bash
# The whole test suite: starts PostgreSQL + pgvector on loopback (scripts/pg.sh; the
# first run installs it from PyPI), runs every crate's tests, then the PostgreSQL ones
# (ignored in a plain `cargo test`; the conformance suite against PostgreSQL too), then
# two `mnem serve` processes on one database (tests/e2e/pg_two_servers.py), and stops
# the server again.
#
# With MNEM_PG_URL already set, that server is used and left running. With
# MNEM_EVAL_DATA naming a folder of the benchmark development files
# (longmemeval_s_dev.json, locomo_dev.json), the eval also runs on their first questions.
set -euo pipefail
cd "$(dirname "$0")/.."

started=""
if [ -z "${MNEM_PG_URL:-}" ]; then
    MNEM_PG_URL="$(scripts/pg.sh start)"
    export MNEM_PG_URL
    started=1
    trap 'scripts/pg.sh clean || true; scripts/pg.sh stop' EXIT
fi
echo "PostgreSQL tests use $MNEM_PG_URL" >&2
cargo test --workspace "$@"
# The tests that need a server are ignored in a plain `cargo test`; here they run. The
# test targets are named across the workspace (not `-p mnem-postgres`), so cargo resolves
# the same features as above and rebuilds nothing. The statement statistics start empty,
# so the audit after them reads exactly what these tests made the backend send.
if [ -n "$started" ] || [ "$MNEM_PG_URL" = "$(scripts/pg.sh url)" ]; then
    scripts/pg.sh reset-statements
fi
cargo test --workspace --test conformance --test postgres "$@" -- --ignored
cargo test --workspace --test distribution "$@" -- --ignored
if [ -n "${MNEM_EVAL_DATA:-}" ]; then
    cargo test --workspace --test smoke "$@" -- --ignored
fi

# Two servers on one database, through the real binary (built by the tests above).
if [ -n "$started" ]; then
    python3 tests/e2e/pg_two_servers.py "${CARGO_TARGET_DIR:-target}/debug/mnem" \
        "$(scripts/pg.sh database mnem_two_servers)"
fi
