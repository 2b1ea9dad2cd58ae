from typing import Optional

class NativeError(Exception):
    """args: (code, message, field or None)."""

class Store:
    def __init__(
        self, path: Optional[str], team: str, profile: str, embedder: str
    ) -> None: ...
    def call(self, operation: str, input: str) -> str: ...
