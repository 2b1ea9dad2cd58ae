from typing import List, Optional

class NativeError(Exception):
    """args: (code, message, field or None)."""

class Store:
    def __init__(
        self, path: Optional[str], team: str, profile: str, embedder: str
    ) -> None: ...
    def call(self, operation: str, input: str) -> str: ...
    def import_chat(
        self, transcript: str, scope: Optional[str] = None, start: Optional[str] = None
    ) -> str: ...
    def import_pack(self, pack: str, trusted: bool) -> str: ...

def cli(argv: List[str]) -> int:
    """Runs the `mnem` command line (program name first); returns the exit status."""
