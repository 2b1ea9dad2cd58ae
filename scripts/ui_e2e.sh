#!/usr/bin/env bash
# The web console in a real browser: headless Chromium (the Debian package, installed if
# missing) driven by Playwright for Python (from PyPI, into a virtualenv under the target
# directory; it uses the system Chromium and downloads no browser). Runs
# tests/e2e/ui_browser.py against the debug binary and refreshes docs/screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq chromium >/dev/null
fi
. scripts/e2e_venv.sh
e2e_venv "playwright==1.58.0"
cargo build -q -p mnem-cli
"$venv/bin/python" tests/e2e/ui_browser.py "$target/debug/mnem" "$(command -v chromium)"
