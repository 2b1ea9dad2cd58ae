#!/usr/bin/env bash
# Coverage-guided fuzzing of mnem's input paths with AFL++ (stable Rust, via cargo-afl):
# every target of crates/mnem-fuzz/src/targets.rs, seeded from its committed corpus, for
# SECONDS each. Prints executions, paths found, crashes and hangs per target and exits 1
# when any target crashed (its inputs are under $MNEM_AFL_OUT/<target>/default/crashes).
#
#   scripts/fuzz_afl.sh [SECONDS] [TARGET ...]     (default: 60 s, every target)
#
# A found input belongs in crates/mnem-fuzz/corpus/<target>/ once fixed: the corpus
# replay test (cargo test -p mnem-fuzz) then keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
out="${MNEM_AFL_OUT:-target/afl}"
afl_version="0.18.2"

if ! cargo afl --version >/dev/null 2>&1; then
  echo "installing cargo-afl $afl_version (builds AFL++ once)" >&2
  cargo install cargo-afl --locked --version "$afl_version" >&2
fi
echo "building the harness (fuzz/afl) with AFL++ instrumentation" >&2
(cd fuzz/afl && cargo afl build --release >&2)
harness="fuzz/afl/target/release/mnem-afl"

# The harness lists its targets: `name corpus` per line.
if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <("$harness" --list | cut -d' ' -f1)
fi
corpus_of() {
  "$harness" --list | awk -v t="$1" '$1 == t { print $2 }'
}

# AFL++ runs unattended: no UI, no CPU-governor or core-pattern checks a container
# cannot change.
export AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_NO_AFFINITY=1

status=0
printf '%-10s %10s %8s %8s %8s %8s\n' target execs exec/s paths crashes hangs
for target in "${targets[@]}"; do
  corpus="$(corpus_of "$target")"
  [ -n "$corpus" ] || { echo "no target $target" >&2; exit 2; }
  seeds="$out/$target/seeds"
  rm -rf "$out/$target"
  mkdir -p "$seeds"
  # One file per seed: each line of corpus/<name>.txt (escapes as mnem_fuzz::corpus
  # reads them) and each file of corpus/<name>/.
  python3 - "$corpus" "$seeds" <<'PY'
import os, shutil, sys
name, into = sys.argv[1], sys.argv[2]
root = "crates/mnem-fuzz/corpus"
n = 0
if os.path.exists(f"{root}/{name}.txt"):
    for line in open(f"{root}/{name}.txt", encoding="utf-8").read().splitlines():
        if line and not line.startswith("#"):
            n += 1
            open(f"{into}/line{n:03}", "w", encoding="utf-8").write(
                line.replace("\\n", "\n").replace("\\t", "\t"))
if os.path.isdir(f"{root}/{name}"):
    for f in sorted(os.listdir(f"{root}/{name}")):
        shutil.copy(f"{root}/{name}/{f}", f"{into}/{f}")
PY
  cargo afl fuzz -i "$seeds" -o "$out/$target" -V "$seconds" -t 5000 -- "$harness" "$target" \
    >"$out/$target.log" 2>&1 || { echo "afl-fuzz failed on $target: $out/$target.log" >&2; tail -20 "$out/$target.log" >&2; status=1; continue; }
  stats="$out/$target/default/fuzzer_stats"
  stat() { sed -n "s/^$1 *: *//p" "$stats"; }
  crashes="$(stat saved_crashes)"
  printf '%-10s %10s %8s %8s %8s %8s\n' "$target" "$(stat execs_done)" "$(stat execs_per_sec)" \
    "$(stat corpus_count)" "$crashes" "$(stat saved_hangs)"
  if [ "${crashes:-0}" != "0" ]; then
    status=1
  fi
done
exit "$status"
