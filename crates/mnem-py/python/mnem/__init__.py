"""mnem: long-term memory for AI agents.

``Memory`` runs the embedded store in this process (one SQLite file, the built-in
embedding model, no server); ``Client`` talks to ``mnem serve`` over HTTP. Both have the
same methods and answer the same typed objects::

    from mnem import Memory
    m = Memory("agent.db", team="t", profile="p")
    m.remember("Ann moved to Lisbon in May", source_key="chat-1")
    for result in m.recall("where does Ann live?").results:
        print(result.context)

Threading: a ``Memory`` may be shared by threads (each call releases the GIL while it
runs; the store serialises writes). Its calls block; from asyncio use ``AsyncMemory`` or
``AsyncClient``, the same methods as coroutines, each run in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Optional, Union

from . import _native
from ._api import _Operations
from ._async import _AsyncOperations
from .errors import (
    Busy,
    Conflict,
    Forbidden,
    InvalidRequest,
    MnemError,
    NotFound,
    Unavailable,
    from_code,
)
from .types import Recalled, Result, WindowItem, Written

__all__ = [
    "Memory",
    "Client",
    "AsyncMemory",
    "AsyncClient",
    "Recalled",
    "Result",
    "WindowItem",
    "Written",
    "MnemError",
    "InvalidRequest",
    "Forbidden",
    "NotFound",
    "Conflict",
    "Busy",
    "Unavailable",
]


class Memory(_Operations):
    """The embedded store at ``path`` (created if missing; ``None``: the per-user default
    store ``mnem`` itself uses), as ``profile`` of ``team``. ``embedder="none"`` recalls
    by full text only and loads no model."""

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]", None] = None,
        *,
        team: str = "local",
        profile: str = "default",
        embedder: str = "builtin",
    ) -> None:
        try:
            self._store = _native.Store(
                None if path is None else os.fspath(path), team, profile, embedder
            )
        except _native.NativeError as err:
            raise from_code(*err.args) from None

    def _call(self, operation: str, payload: Dict[str, Any]) -> Dict[str, Any]:
        return _answer(self._store.call, operation, json.dumps(payload))

    def _import_chat(
        self, transcript: str, *, start: Optional[str], scope: Optional[str]
    ) -> Dict[str, Any]:
        return _answer(self._store.import_chat, transcript, scope, start)

    def import_pack(self, pack: str, *, trusted: bool = False) -> Dict[str, Any]:
        """Imports a memory pack (``export()["pack"]``, or a file ``mnem export`` wrote)
        into this team and returns what it wrote and found. ``trusted`` keeps tiers and
        statuses as exported; by default claims arrive for review. (In-process only: the
        HTTP API has no pack import.)"""
        return _answer(self._store.import_pack, pack, trusted)


def _answer(native_call: Any, *args: Any) -> Dict[str, Any]:
    """A native call's JSON answer, or the exception class its refusal names."""
    try:
        return json.loads(native_call(*args))
    except _native.NativeError as err:
        raise from_code(*err.args) from None


class Client(_Operations):
    """``mnem serve`` at ``url`` (e.g. ``http://127.0.0.1:8080``) with API key ``key``."""

    def __init__(self, url: str, key: str, *, timeout: float = 30.0) -> None:
        self._url = url.rstrip("/")
        self._key = key
        self._timeout = timeout

    def _call(self, operation: str, payload: Dict[str, Any]) -> Dict[str, Any]:
        return self._post(f"/v1/{operation}", json.dumps(payload), "application/json")

    def _import_chat(
        self, transcript: str, *, start: Optional[str], scope: Optional[str]
    ) -> Dict[str, Any]:
        if scope is not None:
            raise InvalidRequest("the HTTP import places turns team-wide: no scope", "scope")
        query = f"?{urllib.parse.urlencode({'start': start})}" if start else ""
        return self._post(f"/v1/import{query}", transcript, "application/x-ndjson")

    def _post(self, path: str, body: str, content_type: str) -> Dict[str, Any]:
        request = urllib.request.Request(
            f"{self._url}{path}",
            data=body.encode(),
            headers={
                "Content-Type": content_type,
                "Authorization": f"Bearer {self._key}",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            raise _http_error(err) from None


def _http_error(err: "urllib.error.HTTPError") -> MnemError:
    """The exception an HTTP error body (``{"error": {"code", "message", "field"?}}``)
    names; a body that is not one still raises, with the status."""
    try:
        body: Optional[Dict[str, Any]] = json.loads(err.read()).get("error")
    except (ValueError, AttributeError):
        body = None
    if not body:
        return MnemError(f"HTTP {err.code}: {err.reason}")
    if err.code == 401:
        return Forbidden(body.get("message", "unauthorised"), body.get("field"))
    return from_code(body.get("code", ""), body.get("message", ""), body.get("field"))


class AsyncMemory(_AsyncOperations):
    """``Memory`` for asyncio: the same arguments, the same methods as coroutines."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(Memory(*args, **kwargs))

    async def import_pack(self, pack: str, *, trusted: bool = False) -> Dict[str, Any]:
        return await asyncio.to_thread(self._sync.import_pack, pack, trusted=trusted)


class AsyncClient(_AsyncOperations):
    """``Client`` for asyncio: the same arguments, the same methods as coroutines."""

    def __init__(self, url: str, key: str, *, timeout: float = 30.0) -> None:
        super().__init__(Client(url, key, timeout=timeout))
