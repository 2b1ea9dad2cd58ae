//! `trace_memory`, written once for every backend: a backend implements [`TraceRows`]
//! (bounded reads of authoritative rows and logs under a time view) and [`trace`]
//! assembles them, with the core's rules (`mnem_core::graph::traced_supports`: quotes
//! within a byte budget and never of another profile's private text, a claim derived
//! only from such text hidden like its source) and the event and version-chain bounds,
//! each cut reported as `truncated`.

use mnem_core::graph::{
    recent_oldest_first, traced_supports, CitedSpan, Relationship, RelationshipRef, Trace,
    Transition, VerificationEvent, TRACE_MAX_EVENTS,
};
use mnem_core::{Actor, RelationshipId, Timestamp};

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
    let owned = relationship.owner_profile_id == actor.profile;
    let (supports, withheld) =
        traced_supports(spans, owned).ok_or(StoreError::RelationshipNotFound { id })?;
    truncated |= withheld;

    // One more than the bound is read, so a cut is known and reported.
    let mut verification_events = rows
        .verification_events(actor, id, view.known_at, TRACE_MAX_EVENTS + 1)
        .await?;
    truncated |= recent_oldest_first(&mut verification_events);
    let mut transitions = rows
        .transitions(actor, id, view.known_at, TRACE_MAX_EVENTS + 1)
        .await?;
    truncated |= recent_oldest_first(&mut transitions);

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
