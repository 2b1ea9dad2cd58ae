#!/usr/bin/env bash
# A real remember → recall round trip on the embedded store: builds mnem, writes three
# pieces of evidence to a fresh SQLite file and recalls them. No server, no network.
set -euo pipefail
cd "$(dirname "$0")/.."

# The first build compiles every dependency (several minutes): cargo shows its progress.
echo "building mnem (release)…" >&2
cargo build --release --bin mnem
mnem=target/release/mnem
store=$(mktemp -d)/demo.db
trap 'rm -rf "$(dirname "$store")"' EXIT

"$mnem" --db "$store" remember "The cat sits outside on the porch" --kind observation >/dev/null
"$mnem" --db "$store" remember "We decided to ship the billing API on Friday" --kind decision --ref issue:BILL-42 >/dev/null
"$mnem" --db "$store" remember "Alice prefers tea over coffee" --kind preference >/dev/null

echo "\$ mnem recall \"when do we ship billing\""
"$mnem" --db "$store" recall "when do we ship billing"
echo
echo "\$ mnem recall --json --kind preference \"\""
"$mnem" --db "$store" --json recall --kind preference ""
