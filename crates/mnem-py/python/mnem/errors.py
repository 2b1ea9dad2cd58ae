"""Exception classes: one per error class of the operations, each carrying the field it
names (``None`` when the error is not about one field)."""

from __future__ import annotations

from typing import Optional


class MnemError(Exception):
    """An operation refused or failed. ``code`` is the API's error code."""

    code = "internal"

    def __init__(self, message: str, field: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidRequest(MnemError, ValueError):
    """The input was refused; ``field`` names what to fix."""

    code = "invalid_request"


class Forbidden(MnemError, PermissionError):
    """The key may not do this (a read-only key asked to write)."""

    code = "forbidden"


class NotFound(MnemError, LookupError):
    """No such item in this team (or not one the caller may see)."""

    code = "not_found"


class Conflict(MnemError):
    """The item changed since it was read (a correction's expected version)."""

    code = "conflict"


class Busy(MnemError):
    """Another writer holds the store: retry the same call shortly."""

    code = "busy"


class Unavailable(MnemError):
    """A dependency (an embedding endpoint, a verifier) did not answer."""

    code = "unavailable"


_BY_CODE = {
    cls.code: cls
    for cls in (InvalidRequest, Forbidden, NotFound, Conflict, Busy, Unavailable, MnemError)
}


# The HTTP API refuses a body it cannot parse before any operation runs.
_BY_CODE["invalid_json"] = InvalidRequest
_BY_CODE["body_too_large"] = InvalidRequest


def from_code(code: str, message: str, field: Optional[str]) -> MnemError:
    """The exception for an error body's ``code`` (unknown codes: ``MnemError``)."""
    return _BY_CODE.get(code, MnemError)(message, field)
