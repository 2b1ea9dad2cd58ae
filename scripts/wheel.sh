#!/usr/bin/env bash
# `pip install mnem`: builds the wheel — the Python bindings (`from mnem import Memory`,
# PyO3, abi3: any CPython >= 3.9) and the `mnem` command, which the same extension runs,
# with the built-in model inside once — with maturin from PyPI, into target/wheels/.
#
#   scripts/wheel.sh           build it
#   scripts/wheel.sh --check   build it, then install it into a fresh virtualenv with no
#                              Rust toolchain on PATH and check it there: a remember →
#                              recall round trip through the installed command in a fresh
#                              home, the Python tests (tests/python, pytest, with
#                              LangGraph from PyPI; the LangGraph example runs in them)
#                              against the installed package, and the agent set-up entries of
#                              docs/agents.md through the official MCP SDK
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
. scripts/e2e_venv.sh
e2e_venv "maturin==1.16.0" "mcp==2.3.0"
rm -rf "$target/wheels"
"$venv/bin/maturin" build --release --manifest-path crates/mnem-py/Cargo.toml \
    --out "$target/wheels" >&2
wheel=$(ls "$target"/wheels/mnem-*.whl)
echo "wheel: $wheel ($(du -h "$wheel" | cut -f1))" >&2
[ "${1:-}" = "--check" ] || exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
start=$(date +%s%N)
"$work/venv/bin/pip" install -q --disable-pip-version-check --no-index "$wheel"
echo "installed in $(( ($(date +%s%N) - start) / 1000000 )) ms" >&2
# Only the virtualenv and the system's own tools: no cargo, no rustc, no target/.
clean=(env -i "PATH=$work/venv/bin:/usr/bin:/bin" "HOME=$work/home")
if "${clean[@]}" sh -c 'command -v cargo || command -v rustc' >/dev/null; then
    echo "FAILED: a Rust toolchain is on the clean PATH" >&2
    exit 1
fi
installed=$("${clean[@]}" sh -c 'command -v mnem')
[ "$installed" = "$work/venv/bin/mnem" ] || { echo "FAILED: mnem is $installed" >&2; exit 1; }
"${clean[@]}" mnem remember "The wheel carries its own model" >/dev/null
recalled=$("${clean[@]}" mnem --json recall "which model does the wheel carry")
case "$recalled" in
    *"The wheel carries its own model"*) echo "ok: remember → recall through the installed mnem" >&2 ;;
    *) echo "FAILED: recall did not return the note: $recalled" >&2; exit 1 ;;
esac
# LangGraph from PyPI: tests/python/test_langgraph.py holds mnem.langgraph to it.
"$work/venv/bin/pip" install -q --disable-pip-version-check "pytest==8.4.2" "langgraph==1.2.24"
"${clean[@]}" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider tests/python >&2
"$venv/bin/python" tests/e2e/mcp_configs.py "$work/venv/bin/mnem"
echo "wheel check: all passed" >&2
