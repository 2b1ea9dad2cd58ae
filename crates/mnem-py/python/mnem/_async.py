"""Coroutine twins of ``Memory`` and ``Client``: each method runs its blocking twin in a
worker thread (``asyncio.to_thread``), so an event loop never waits on the store or the
network. The native calls release the GIL, so several may run at once."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, Iterable, List, Mapping, Optional

from .types import Recalled, Written


class _AsyncOperations:
    def __init__(self, sync: Any) -> None:
        self._sync = sync

    async def remember(self, content: str, **fields: Any) -> Written:
        return await asyncio.to_thread(self._sync.remember, content, **fields)

    async def remember_many(self, items: Iterable[Mapping[str, Any]]) -> List[Written]:
        return await asyncio.to_thread(self._sync.remember_many, list(items))

    async def import_chat(
        self, messages: Iterable[Mapping[str, Any]], **fields: Any
    ) -> Dict[str, Any]:
        return await asyncio.to_thread(self._sync.import_chat, list(messages), **fields)

    async def recall(self, query: str, **fields: Any) -> Recalled:
        return await asyncio.to_thread(self._sync.recall, query, **fields)

    async def show(self, evidence_id: str) -> Dict[str, Any]:
        return await asyncio.to_thread(self._sync.show, evidence_id)

    async def trace(self, relationship_id: str, **fields: Any) -> Dict[str, Any]:
        return await asyncio.to_thread(self._sync.trace, relationship_id, **fields)

    async def retract(
        self, evidence_ids: List[str], reason: Optional[str] = None
    ) -> Dict[str, Any]:
        return await asyncio.to_thread(self._sync.retract, evidence_ids, reason)

    async def export(self, **fields: Any) -> Dict[str, Any]:
        return await asyncio.to_thread(self._sync.export, **fields)

    async def status(self) -> Dict[str, Any]:
        return await asyncio.to_thread(self._sync.status)

    async def scopes(
        self, under: Optional[str] = None, *, limit: Optional[int] = None
    ) -> List[str]:
        return await asyncio.to_thread(self._sync.scopes, under, limit=limit)

    async def call(self, operation: str, **payload: Any) -> Dict[str, Any]:
        return await asyncio.to_thread(self._sync.call, operation, **payload)
