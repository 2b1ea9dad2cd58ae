#!/usr/bin/env bash
# End-to-end checks with the official Python MCP SDK from PyPI (a client nobody here
# wrote): `mnem mcp` over stdio, and `mnem serve` over streamable HTTP with API keys.
# Installs Python's venv from Debian if missing, the SDK into a virtualenv under the
# target directory, and runs tests/e2e/mcp_{stdio,http}.py against the debug binary
# (built here if needed).
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq python3 python3-venv >/dev/null
fi
venv="$target/e2e-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check "mcp==2.3.0"
cargo build -q -p mnem-cli
"$venv/bin/python" tests/e2e/mcp_stdio.py "$target/debug/mnem"
"$venv/bin/python" tests/e2e/mcp_http.py "$target/debug/mnem"
