//! `trace_memory`, written once for every backend: a backend implements [`TraceRows`]
//! (bounded reads of authoritative rows and logs under a time view) and [`trace`]
//! applies the rules — quotes within a byte budget and never of another profile's
//! private text, a claim derived only from such text hidden like its source, event and
//! version-chain bounds reported as `truncated`.

use mnem_core::graph::{
    Relationship, RelationshipRef, Trace, TracedSupport, Transition, VerificationEvent,
    TRACE_MAX_EVENTS, TRACE_MAX_QUOTE_BYTES,
};
use mnem_core::{Actor, EvidenceId, LifecycleState, RelationshipId, Timestamp};

use crate::{GraphView, Result, StoreError};

/// How far trace follows a chain of corrections in each direction.
pub const MAX_VERSION_CHAIN: usize = 16;
/// At most this many conflicting claims are listed.
pub const MAX_CONFLICTS: usize = 50;

/// The reads `trace` is made of; all inside the actor's team, under the view.
#[allow(async_fn_in_trait)]
pub trait TraceRows {
    /// `RelationshipNotFound` when it is not the team's (or not yet recorded at
    /// `known_at`).
    async fn relationship(
        &self,
        actor: &Actor,
        id: RelationshipId,
        view: &GraphView,
    ) -> Result<Relationship>;
    /// Every cited span, in evidence id then start order.
    async fn cited_spans(
        &self,
        actor: &Actor,
        id: RelationshipId,
        view: &GraphView,
    ) -> Result<Vec<CitedSpan>>;
    /// The newest `limit` verification events recorded by `known_at`, newest first.
    async fn verification_events(
        &self,
        actor: &Actor,
        id: RelationshipId,
        known_at: Option<Timestamp>,
        limit: usize,
    ) -> Result<Vec<VerificationEvent>>;
    /// The newest `limit` transitions recorded by `known_at`, newest first.
    async fn transitions(
        &self,
        actor: &Actor,
        id: RelationshipId,
        known_at: Option<Timestamp>,
        limit: usize,
    ) -> Result<Vec<Transition>>;
    /// Live claims about the same subject and predicate that take another position
    /// where it matters (a single-valued predicate, or already disputed), oldest first,
    /// at most `limit`.
    async fn conflicts(
        &self,
        actor: &Actor,
        relationship: &Relationship,
        view: &GraphView,
        limit: usize,
    ) -> Result<Vec<Relationship>>;
    /// The records that name `id` as the one they correct, oldest first.
    async fn successors(
        &self,
        actor: &Actor,
        id: RelationshipId,
        view: &GraphView,
    ) -> Result<Vec<Relationship>>;
}

/// A cited span as stored, with what the actor may see of its evidence.
pub struct CitedSpan {
    pub evidence_id: EvidenceId,
    pub start: usize,
    pub end: usize,
    /// `None` once the evidence was erased.
    pub quote: Option<String>,
    /// Team evidence, or the actor's own private evidence.
    pub visible: bool,
    /// The evidence's state under the view (erased before it was recorded).
    pub state: LifecycleState,
    pub source_group: String,
}

/// The relationship, its supports with quotes, verification events, transitions,
/// conflicts and correction lineage; bounded in events, versions and quote bytes.
pub async fn trace<R: TraceRows>(
    rows: &R,
    actor: &Actor,
    id: RelationshipId,
    view: &GraphView,
) -> Result<Trace> {
    let relationship = rows.relationship(actor, id, view).await?;
    let mut truncated = false;

    let spans = rows.cited_spans(actor, id, view).await?;
    // Derived only from another profile's private evidence: private like its source.
    if !spans.iter().any(|s| s.visible) && relationship.owner_profile_id != actor.profile {
        return Err(StoreError::RelationshipNotFound { id });
    }
    let mut quoted_bytes = 0;
    let mut supports = Vec::with_capacity(spans.len());
    for span in spans {
        // Another profile's private text is never quoted, only pointed at.
        let mut quote = span.quote.filter(|_| span.visible);
        if let Some(q) = &quote {
            if quoted_bytes + q.len() > TRACE_MAX_QUOTE_BYTES {
                quote = None;
                truncated = true;
            } else {
                quoted_bytes += q.len();
            }
        }
        supports.push(TracedSupport {
            evidence_id: span.evidence_id,
            start: span.start,
            end: span.end,
            quote,
            evidence_state: span.state,
            source_group: if span.visible {
                span.source_group
            } else {
                String::new()
            },
            effective: span.state == LifecycleState::Current,
        });
    }

    // One more than the bound is read, so a cut is known and reported.
    let mut verification_events = rows
        .verification_events(actor, id, view.known_at, TRACE_MAX_EVENTS + 1)
        .await?;
    truncated |= oldest_first_within_bound(&mut verification_events);
    let mut transitions = rows
        .transitions(actor, id, view.known_at, TRACE_MAX_EVENTS + 1)
        .await?;
    truncated |= oldest_first_within_bound(&mut transitions);

    let conflicts = rows
        .conflicts(actor, &relationship, view, MAX_CONFLICTS)
        .await?
        .iter()
        .map(RelationshipRef::from)
        .collect();

    let mut supersedes = Vec::new();
    let mut previous = relationship.supersedes;
    while let Some(prior) = previous {
        if supersedes.len() >= MAX_VERSION_CHAIN {
            truncated = true;
            break;
        }
        match rows.relationship(actor, prior, view).await {
            Ok(r) => {
                previous = r.supersedes;
                supersedes.push(RelationshipRef::from(&r));
            }
            Err(StoreError::RelationshipNotFound { .. }) => break, // erased
            Err(e) => return Err(e),
        }
    }
    let mut superseded_by = Vec::new();
    let mut current = id;
    loop {
        let next = rows.successors(actor, current, view).await?;
        let Some(first) = next.first() else { break };
        if superseded_by.len() + next.len() > MAX_VERSION_CHAIN {
            truncated = true;
            break;
        }
        current = first.relationship_id;
        superseded_by.extend(next.iter().map(RelationshipRef::from));
    }

    Ok(Trace {
        relationship,
        supports,
        verification_events,
        transitions,
        conflicts,
        supersedes,
        superseded_by,
        truncated,
    })
}

/// Keeps the newest `TRACE_MAX_EVENTS` of a newest-first log read, oldest first;
/// whether anything was cut.
fn oldest_first_within_bound<T>(log: &mut Vec<T>) -> bool {
    let cut = log.len() > TRACE_MAX_EVENTS;
    log.truncate(TRACE_MAX_EVENTS);
    log.reverse();
    cut
}
