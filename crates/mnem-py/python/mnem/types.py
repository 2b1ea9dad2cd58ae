"""What recall, show and remember answer, as typed objects. Each keeps the answer's JSON
in ``raw``, so a field added by a newer server is never lost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass(frozen=True)
class WindowItem:
    """A neighbour shown with a result (``hit``: itself a match of the query)."""

    evidence_id: str
    context: str
    hit: bool = False
    partial: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "WindowItem":
        return cls(
            evidence_id=data["evidence_id"],
            context=data.get("context", ""),
            hit=bool(data.get("hit", False)),
            partial=bool(data.get("partial", False)),
            raw=data,
        )


@dataclass(frozen=True)
class Result:
    """One recalled item: its context (whole, or an excerpt when ``partial``; ``show``
    returns the whole text) and the window around it, in order."""

    evidence_id: str
    context: str
    observed_at: Optional[str] = None
    source: Optional[str] = None
    kind: Optional[str] = None
    partial: bool = False
    before: List[WindowItem] = field(default_factory=list)
    after: List[WindowItem] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Result":
        return cls(
            evidence_id=data["evidence_id"],
            context=data.get("context", ""),
            observed_at=data.get("observed_at"),
            source=data.get("source"),
            kind=data.get("kind"),
            partial=bool(data.get("partial", False)),
            before=[WindowItem.from_json(i) for i in data.get("before", [])],
            after=[WindowItem.from_json(i) for i in data.get("after", [])],
            raw=data,
        )


@dataclass(frozen=True)
class Recalled:
    """A recall's answer: ranked results within the byte budget, discovery paths through
    the relationship graph, and advice on what to ask next."""

    results: List[Result]
    discovery_paths: List[Dict[str, Any]]
    guidance: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Recalled":
        return cls(
            results=[Result.from_json(r) for r in data.get("results", [])],
            discovery_paths=list(data.get("discovery_paths", [])),
            guidance=data.get("guidance", ""),
            raw=data,
        )


@dataclass(frozen=True)
class Written:
    """One remembered item: its id (a repeat of a stored text answers the stored id, with
    ``duplicate`` saying so) and its state (``quarantined`` when screening held it)."""

    evidence_id: str
    state: str
    duplicate: Optional[Any] = None
    quarantined_because: Optional[str] = None

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Written":
        return cls(
            evidence_id=data["evidence_id"],
            state=data.get("state", ""),
            duplicate=data.get("duplicate"),
            quarantined_because=data.get("quarantined_because"),
        )
