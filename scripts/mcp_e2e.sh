#!/usr/bin/env bash
# End-to-end checks with the official Python MCP SDK from PyPI (a client nobody here
# wrote): `mnem mcp` over stdio, `mnem serve` over streamable HTTP with API keys, and the
# agent set-up entries of docs/agents.md as written; and `/openapi.json` through a code
# generator from PyPI (openapi-python-client), whose client then talks to `mnem serve`,
# and every operation's real answer through a JSON Schema validator from PyPI (jsonschema)
# against the schema the document gives it.
# Installs Python's venv from Debian if missing, the SDK into a virtualenv under the
# target directory, and runs tests/e2e/mcp_{stdio,http,configs}.py against the debug binary
# (built here if needed).
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
. scripts/e2e_venv.sh
e2e_venv "mcp==2.3.0" "openapi-python-client==0.29.1" "jsonschema==4.25.1"
cargo build -q -p mnem-cli
"$venv/bin/python" tests/e2e/mcp_stdio.py "$target/debug/mnem"
"$venv/bin/python" tests/e2e/mcp_http.py "$target/debug/mnem"
"$venv/bin/python" tests/e2e/mcp_configs.py "$target/debug/mnem"
"$venv/bin/python" tests/e2e/openapi_client.py "$target/debug/mnem"
"$venv/bin/python" tests/e2e/openapi_answers.py "$target/debug/mnem"
