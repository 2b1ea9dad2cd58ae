#!/usr/bin/env bash
# Load test of `mnem serve` on loopback: N evidence (real LongMemEval dev turns, built-in
# embedder) written through /v1/remember, then wrk with C connections recalling with the
# dataset's questions, over the JSON API and over MCP (tools/call recall_memory); prints
# requests/s, p50/p95/p99 and the server's resident memory.
#
# Usage: scripts/bench/http.sh [N=10000] [CONNECTIONS=8] [SECONDS=30]
# Needs: cargo build --release; wrk (Debian: apt-get install wrk); python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${1:-10000}" connections="${2:-8}" seconds="${3:-30}"
mnem="${CARGO_TARGET_DIR:-target}/release/mnem"
# MNEM_DATA: a LongMemEval-S file (e.g. longmemeval_s_dev.json), whose turns fill the store.
data="${MNEM_DATA:?set MNEM_DATA to a LongMemEval-S json file}"
work="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
# MNEM_BENCH_KEEP=FILE keeps the ingested store there for further runs.
export MNEM_DB="${MNEM_BENCH_KEEP:-$work/bench.db}"
rm -f "$MNEM_DB" "$MNEM_DB-wal" "$MNEM_DB-shm"

"$mnem" team create bench >/dev/null
key="$("$mnem" --team bench key create --profile load --access write)"
# The load is one key: lift its rate limit so the server, not the limiter, is measured.
start_server() {
  "$mnem" serve --listen 127.0.0.1:0 --rate-limit 1000000 --burst 1000000 2>"$work/serve.log" &
  server=$!
  until grep -q "listening on" "$work/serve.log"; do sleep 0.2; done
  base="$(grep -o 'http://[0-9.:]*' "$work/serve.log" | head -1)"
}

start_server
python3 scripts/bench/http_load.py ingest "$base" "$key" "$data" "$n"
grep -E 'VmRSS|VmHWM' "/proc/$server/status" | sed 's/^/after ingest: /'
# Measure a server as deployed: restarted on the filled store (it builds its vector
# graphs before listening).
kill "$server"; wait "$server" 2>/dev/null || true
start_server
grep -E 'VmRSS|VmHWM' "/proc/$server/status" | sed 's/^/after restart: /'
threads=$(( connections < 2 ? connections : 2 ))
python3 scripts/bench/http_load.py lua "$key" "$data" "$work"
for name in http_recall mcp_recall_memory; do
  path=/v1/recall
  [ "$name" = mcp_recall_memory ] && path=/mcp
  wrk -t"$threads" -c"$connections" -d5s -s "$work/$name.lua" "$base$path" >/dev/null   # warm-up
  wrk -t"$threads" -c"$connections" -d"${seconds}s" -s "$work/$name.lua" "$base$path" | grep "$name"
done
grep -E 'VmRSS|VmHWM' "/proc/$server/status" | sed 's/^/after load: /'
