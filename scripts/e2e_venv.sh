# Sourced by the end-to-end scripts: `e2e_venv PACKAGE...` makes (once) a virtualenv under
# the target directory — installing Python's venv from Debian if it is missing — installs
# the given PyPI packages into it, and sets `venv` to its path.
e2e_venv() {
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq python3 python3-venv >/dev/null
  fi
  venv="${CARGO_TARGET_DIR:-target}/e2e-venv"
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install -q --disable-pip-version-check "$@"
}
