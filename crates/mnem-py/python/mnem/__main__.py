"""The `mnem` command the wheel installs (also `python -m mnem`): the same program as the
Rust binary, run in this process by the extension."""

import signal
import sys

from . import _native


def main() -> None:
    # Ctrl-C ends the command as it ends the binary: Python's own handler would only set
    # a flag that no Python code checks while the command runs. `mnem serve` and
    # `mnem mcp` install their own handler for a clean shutdown.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(_native.cli(sys.argv))


if __name__ == "__main__":
    main()
