"""The typed methods, written once over a transport that runs an operation by name on a
JSON object: in-process (``Memory``) or over HTTP (``Client``)."""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, Iterable, List, Mapping, Optional

from .types import Recalled, Written


def _pruned(fields: Mapping[str, Any]) -> Dict[str, Any]:
    """The fields that were given: ``None`` means "the default", so it is not sent."""
    return {key: value for key, value in fields.items() if value is not None}


class _Operations:
    def _call(self, operation: str, payload: Dict[str, Any]) -> Dict[str, Any]:
        raise NotImplementedError

    def remember(
        self,
        content: str,
        *,
        kind: Optional[str] = None,
        source: Optional[str] = None,
        source_type: Optional[str] = None,
        source_key: Optional[str] = None,
        scope: Optional[str] = None,
        observed_at: Optional[str] = None,
        labels: Optional[List[str]] = None,
        **fields: Any,
    ) -> Written:
        """Stores one piece of evidence and returns what was written. ``source_key``
        groups a conversation or document (recall shows an item's neighbours in it);
        ``observed_at`` is RFC 3339. Other evidence fields of the API pass through."""
        item = _pruned(
            dict(
                content=content,
                kind=kind,
                source=source,
                source_type=source_type,
                source_key=source_key,
                scope=scope,
                observed_at=observed_at,
                labels=labels,
                **fields,
            )
        )
        return self.remember_many([item])[0]

    def remember_many(self, items: Iterable[Mapping[str, Any]]) -> List[Written]:
        """Stores several pieces of evidence (each a dict of evidence fields) in one
        write: all or none."""
        answer = self._call("remember", {"evidence": [dict(item) for item in items]})
        return [Written.from_json(e) for e in answer.get("evidence", [])]

    def import_chat(
        self,
        messages: Iterable[Mapping[str, Any]],
        *,
        session: Optional[str] = None,
        start: Optional[str] = None,
        scope: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Stores an OpenAI-style message list (``{"role": …, "content": …}``) through the
        reader ``mnem import --format chat`` uses: one turn per message, ``"role: content"``
        (``name`` wins over ``role``), grouped under ``session`` — by default a new one per
        call, so recall shows a turn with its neighbours from this chat only — and untimed
        turns a second apart from ``start`` (RFC 3339; default now). ``scope`` places the
        turns (in-process only). Returns the import's report: ``stored``,
        ``already_stored``, ``failed`` (each message that could not be read, with why) and
        the rest."""
        record = {"session": session or uuid.uuid4().hex, "messages": list(messages)}
        return self._import_chat(json.dumps(record), start=start, scope=scope)

    def _import_chat(
        self, transcript: str, *, start: Optional[str], scope: Optional[str]
    ) -> Dict[str, Any]:
        raise NotImplementedError

    def recall(
        self,
        query: str,
        *,
        limit: Optional[int] = None,
        window: Optional[int] = None,
        context_bytes: Optional[int] = None,
        scope: Optional[str] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
        kinds: Optional[List[str]] = None,
        **fields: Any,
    ) -> Recalled:
        """Ranked evidence for ``query`` within ``context_bytes`` (default 6,000), at most
        ``limit`` results, each with ``window`` neighbours on each side; ``scope``,
        ``since`` and ``until`` narrow what is searched."""
        payload = _pruned(
            dict(
                query=query,
                limit=limit,
                window=window,
                context_bytes=context_bytes,
                scope=scope,
                since=since,
                until=until,
                kinds=kinds,
                **fields,
            )
        )
        return Recalled.from_json(self._call("recall", payload))

    def show(self, evidence_id: str) -> Dict[str, Any]:
        """One item in full (recall may return an excerpt)."""
        return self._call("show", {"evidence_id": evidence_id})

    def trace(self, relationship_id: str, **fields: Any) -> Dict[str, Any]:
        """One relationship with its evidence and history."""
        return self._call("trace", dict(relationship_id=relationship_id, **fields))

    def retract(self, evidence_ids: List[str], reason: Optional[str] = None) -> Dict[str, Any]:
        """Withdraws evidence from recall (kept, and shown as retracted by ``show``)."""
        return self._call("retract", _pruned(dict(evidence_ids=list(evidence_ids), reason=reason)))

    def export(self, **fields: Any) -> Dict[str, Any]:
        """The team's memory as a pack (a JSON document ``mnem import`` reads)."""
        return self._call("export", fields)

    def status(self) -> Dict[str, Any]:
        """The store's state: counts, the embedding contract, what is pending."""
        return self._call("status", {})

    def scopes(self, under: Optional[str] = None, *, limit: Optional[int] = None) -> List[str]:
        """The scope paths of the evidence this profile could recall (``""`` is team-wide),
        in path order: at and under ``under`` when given; at most ``limit`` (default
        100, at most 1,000)."""
        return self._call("scopes", _pruned(dict(under=under, limit=limit)))["scopes"]

    def call(self, operation: str, **payload: Any) -> Dict[str, Any]:
        """Any operation by its API name with its JSON fields, for what has no method."""
        return self._call(operation, payload)
