"""LangGraph's long-term memory store (``BaseStore``) on mnem: what a graph puts is
evidence the team's agents recall too, searched by mnem's hybrid recall, and never lost
when it is overwritten or deleted (``show`` and ``export`` keep its history)::

    from mnem import Memory
    from mnem.langgraph import MnemStore

    store = MnemStore(Memory("agent.db", team="t"))
    graph = builder.compile(store=store)   # nodes read it as `store` / `runtime.store`

Needs ``pip install langgraph`` (or ``pip install "mnem[langgraph]"``). Works over
``Memory`` (in-process) and ``Client`` (``mnem serve``) alike; ``abatch`` and every
``a*`` method run the blocking calls in a worker thread.

How LangGraph's model maps onto mnem's:

- A namespace ``("users", "42")`` is the scope ``langgraph/users/42``: ``root`` (default
  ``langgraph``, a label LangGraph reserves, so no namespace of a graph can collide with
  it) and then its labels. A label may not contain ``/`` (a scope's separator), control
  characters or surrounding spaces, nor be longer than 64 characters; namespaces are at
  most 15 labels deep. A key is 1 to 256 characters without surrounding spaces.
- An item is one evidence item: its value as JSON text (what recall matches), its key as a
  ``langgraph.key`` ref, its first write's time as a ``langgraph.created_at`` ref. A put of
  an existing key is a newer revision of it (``source_key`` ``langgraph:[…namespace, key]``):
  the older one is superseded, not erased. A delete retracts the current one.
- ``search`` with a ``query`` is a recall over the namespace prefix and everything under it
  (its ``score`` is the recall's, in (0, 1]); without one it lists newest first. A
  ``filter`` is LangGraph's (exact values, ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``,
  ``$lte``), applied to the first 50 matches: one recall returns at most 50, so ``offset``
  + ``limit`` past 50 returns fewer.
- ``list_namespaces`` lists the namespaces that hold at least one current item (at most
  1,000), sorted as LangGraph sorts them.
- A value that write-time screening holds (text that reads like an instruction to an
  agent) is stored but not returned until released (``mnem release``), and the key's
  previous value, if any, stays the one read: ``put`` warns with ``HeldWarning`` rather
  than losing it silently.
- ``ttl`` is not supported (``supports_ttl`` is false, as LangGraph's own base store says).
- Operations in one ``batch`` run in order, each seeing the ones before it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
import warnings
from datetime import datetime
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as missing:  # pragma: no cover - the message is the point
    raise ImportError(
        "mnem.langgraph needs LangGraph: pip install langgraph (or mnem[langgraph])"
    ) from missing

from ._api import _Operations

__all__ = ["MnemStore", "HeldWarning"]

KEY_REF = "langgraph.key"
CREATED_REF = "langgraph.created_at"
KIND = "langgraph"
# The most results one recall returns, and the most scopes one `scopes` read lists.
RECALL_LIMIT = 50
SCOPES_LIMIT = 1_000
MAX_LABEL_CHARS = 64
MAX_KEY_CHARS = 256
MAX_SCOPE_DEPTH = 16
MAX_SOURCE_KEY_BYTES = 1024


class HeldWarning(UserWarning):
    """A put was stored but held by mnem's write-time screening: it is not returned by
    ``get`` or ``search`` until an operator releases it (``mnem release``)."""


class MnemStore(BaseStore):
    """A LangGraph ``BaseStore`` over ``memory`` (a ``mnem.Memory`` or ``mnem.Client``),
    keeping every namespace under the scope ``root``."""

    def __init__(self, memory: _Operations, *, root: str = "langgraph") -> None:
        self._memory = memory
        self._root = _label(root)
        self._lock = threading.Lock()
        self._last_revision = 0

    def batch(self, ops: Iterable[Op]) -> List[Result]:
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> List[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        if isinstance(op, PutOp):
            if op.value is None:
                self._delete(op.namespace, op.key)
            else:
                self._put(op.namespace, op.key, op.value)
            return None
        raise ValueError(f"unknown store operation {type(op).__name__}")

    # --- the four operations -------------------------------------------------------

    def _get(self, namespace: Tuple[str, ...], key: str) -> Optional[Item]:
        current = self._current(namespace, key)
        return None if current is None else _item(current, Item)

    def _put(self, namespace: Tuple[str, ...], key: str, value: Any) -> None:
        scope = self._scope(namespace)
        if not namespace:
            raise InvalidNamespaceError("a namespace needs at least one label")
        content = json.dumps(dict(value), ensure_ascii=False, sort_keys=True)
        current = self._current(namespace, key)
        refs = [{"kind": KEY_REF, "id": _key(key)}]
        if current is not None:
            # The first write's time stays the item's creation time.
            refs.append({"kind": CREATED_REF, "id": _created_at(current["evidence"])})
        written = self._memory.remember(
            content,
            kind=KIND,
            source="langgraph",
            source_key=_source_key(namespace, key),
            source_revision=self._revision(),
            scope=scope,
            refs=refs,
        )
        if written.state == "quarantined":
            warnings.warn(
                f"{namespace}/{key} was stored but held by screening "
                f"({written.quarantined_because}); `mnem release {written.evidence_id}` "
                "after review makes it readable",
                HeldWarning,
                stacklevel=4,
            )

    def _delete(self, namespace: Tuple[str, ...], key: str) -> None:
        current = self._current(namespace, key)
        if current is not None:
            evidence_id = current["evidence"]["id"]
            self._memory.retract([evidence_id], "deleted through the LangGraph store")

    def _search(self, op: SearchOp) -> List[SearchItem]:
        scope = self._scope(op.namespace_prefix)
        wanted = max(op.offset, 0) + max(op.limit, 0)
        pool = RECALL_LIMIT if op.filter else max(1, min(RECALL_LIMIT, wanted))
        fields: Dict[str, Any] = dict(scope=scope, include_descendants=True, limit=pool, window=0)
        if op.query:
            # `explain` is the same recall with each result's score.
            results = self._memory.call("explain", query=op.query, **fields)["results"]
        else:
            results = self._memory.recall("", **fields).raw["results"]
        found: List[SearchItem] = []
        for result in results:
            shown = self._memory.show(result["evidence_id"])
            item = _item(shown, SearchItem)
            if op.filter and not _matches(item.value, op.filter):
                continue
            item.score = result.get("score")
            found.append(item)
        return found[op.offset : op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> List[Tuple[str, ...]]:
        paths = self._memory.scopes(self._root, limit=SCOPES_LIMIT)
        namespaces = [tuple(path.split("/")[1:]) for path in paths if path != self._root]
        for condition in op.match_conditions or ():
            namespaces = [ns for ns in namespaces if _does_match(condition, ns)]
        if op.max_depth is not None:
            namespaces = list({ns[: op.max_depth] for ns in namespaces})
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    # --- reading and naming --------------------------------------------------------

    def _current(self, namespace: Tuple[str, ...], key: str) -> Optional[Dict[str, Any]]:
        """The current item of ``key`` in ``namespace`` as ``show`` answers it, or None."""
        recalled = self._memory.recall(
            "",
            scope=self._scope(namespace),
            refs=[{"kind": KEY_REF, "id": _key(key)}],
            limit=1,
            window=0,
        )
        if not recalled.results:
            return None
        return self._memory.show(recalled.results[0].evidence_id)

    def _scope(self, namespace: Sequence[str]) -> str:
        if len(namespace) >= MAX_SCOPE_DEPTH:
            raise InvalidNamespaceError(
                f"a namespace is at most {MAX_SCOPE_DEPTH - 1} labels deep here: {namespace}"
            )
        return "/".join([self._root, *(_label(label) for label in namespace)])

    def _revision(self) -> int:
        """A source revision newer than any this store wrote before: the time in
        microseconds, one past the last when the clock has not moved."""
        with self._lock:
            self._last_revision = max(time.time_ns() // 1000, self._last_revision + 1)
            return self._last_revision


def _label(label: Any) -> str:
    if (
        not isinstance(label, str)
        or not label
        or label != label.strip()
        or "/" in label
        or "." in label
        or any(ord(c) < 32 or ord(c) == 127 for c in label)
        or len(label) > MAX_LABEL_CHARS
    ):
        raise InvalidNamespaceError(
            f"namespace label {label!r}: 1 to {MAX_LABEL_CHARS} characters without `/`, `.`, "
            "control characters or surrounding spaces"
        )
    return label


def _key(key: Any) -> str:
    if not isinstance(key, str) or not key or key != key.strip() or len(key) > MAX_KEY_CHARS:
        raise ValueError(
            f"key {key!r}: 1 to {MAX_KEY_CHARS} characters without surrounding spaces"
        )
    return key


def _source_key(namespace: Tuple[str, ...], key: str) -> str:
    """Names the item's revisions: its namespace and key, or their hash when too long."""
    named = "langgraph:" + json.dumps([*namespace, key], ensure_ascii=False)
    if len(named.encode()) <= MAX_SOURCE_KEY_BYTES:
        return named
    return "langgraph:sha256:" + hashlib.sha256(named.encode()).hexdigest()


def _ref(evidence: Dict[str, Any], kind: str) -> Optional[str]:
    return next((r["id"] for r in evidence.get("refs", []) if r["kind"] == kind), None)


def _created_at(evidence: Dict[str, Any]) -> str:
    return _ref(evidence, CREATED_REF) or evidence["observed_at"]


def _stamp(text: str) -> datetime:
    # `fromisoformat` reads a `Z` suffix only from Python 3.11.
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _item(shown: Dict[str, Any], kind: Union[type, Any]) -> Any:
    """An ``Item`` (or ``SearchItem``) from ``show``'s answer for a store item."""
    evidence = shown["evidence"]
    try:
        value = json.loads(evidence["content"])
    except ValueError as err:
        raise ValueError(f"evidence {evidence['id']} is not a LangGraph item") from err
    return kind(
        namespace=tuple(evidence["scope"][1:]),
        key=_ref(evidence, KEY_REF),
        value=value,
        created_at=_stamp(_created_at(evidence)),
        updated_at=_stamp(evidence["observed_at"]),
    )


def _does_match(condition: MatchCondition, namespace: Tuple[str, ...]) -> bool:
    """LangGraph's namespace condition: a prefix or suffix, `*` matching any label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path))
    else:
        raise ValueError(f"unsupported match type {condition.match_type!r}")
    return all(want == "*" or have == want for have, want in pairs)


def _matches(value: Dict[str, Any], filters: Dict[str, Any]) -> bool:
    return all(_compare(value.get(field), wanted) for field, wanted in filters.items())


def _compare(have: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: nested objects field by field, lists element by
    element, `$`-operators as PostgreSQL's JSONB compares."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(have, op, operand) for op, operand in wanted.items())
        return isinstance(have, dict) and all(
            _compare(have.get(k), v) for k, v in wanted.items()
        )
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(have, (list, tuple))
            and len(have) == len(wanted)
            and all(_compare(h, w) for h, w in zip(have, wanted))
        )
    return have == wanted


def _operator(have: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return have == operand
    if op == "$ne":
        return have != operand
    comparisons = {
        "$gt": lambda a, b: a > b,
        "$gte": lambda a, b: a >= b,
        "$lt": lambda a, b: a < b,
        "$lte": lambda a, b: a <= b,
    }
    if op not in comparisons:
        raise ValueError(f"unsupported filter operator {op!r}")
    try:
        return comparisons[op](float(have), float(operand))
    except (TypeError, ValueError):
        return False
