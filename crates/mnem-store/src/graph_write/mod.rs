//! The semantic layer's write transactions, written once for every backend.
//!
//! A backend implements [`GraphRows`]: the row reads and appends of one open
//! transaction, always inside the actor's team. The functions here fix what is read,
//! which `mnem_core::graph` decision it feeds, and what is appended in what order; the
//! backend opens and commits the transaction around them. Callers hold the team's write
//! serialisation (SQLite's single writer, PostgreSQL's per-team advisory lock), so the
//! read-then-write steps never interleave with another graph write of the team.
//!
//! This file holds the row trait and what the writes share (a relationship's standing
//! moves); each write has its own module: `remember` (a structured request),
//! `relationship` (one claim), `revisions` (source revisions superseding), `lifecycle`
//! (retract, quarantine, release, forget) and `correct`.

mod correct;
mod lifecycle;
mod relationship;
mod remember;
mod revisions;

pub use correct::commit_correction;
pub use lifecycle::{forget, move_evidence, release_evidence, retract_evidence};
pub(crate) use relationship::{enqueue_entity_document, enqueue_relationship_document};
pub use remember::{commit_remember, replayed};
pub use revisions::{place_revisions, supersede_older_revisions};

use mnem_core::graph::{
    recomputed_standing, EntityKind, EntitySummary, ObjectSummary, Polarity, Proposal,
    Relationship, RelationshipStatus, Rival, Standing, SupportStanding, Verdict, VerificationEvent,
};
use mnem_core::{
    Actor, EntityId, Evidence, EvidenceId, LifecycleState, RelationshipId, TeamId, Timestamp,
};

use crate::dedup::ProvenanceRows;
use crate::Result;

/// The row operations of one open write transaction. Every method acts inside the
/// actor's team only; none decides anything.
///
/// The futures are not required to be `Send`: SQLite runs them on its writer thread,
/// and PostgreSQL's concrete futures are `Send` by themselves.
#[allow(async_fn_in_trait)]
pub trait GraphRows: ProvenanceRows {
    /// `(request hash, outcome JSON)` stored under an idempotency key.
    async fn idempotency_record(
        &self,
        actor: &Actor,
        key: &str,
    ) -> Result<Option<(String, String)>>;
    async fn insert_idempotency_record(
        &self,
        actor: &Actor,
        key: &str,
        request_hash: &str,
        outcome: &str,
        at: Timestamp,
    ) -> Result<()>;

    /// The declared cardinality of a predicate (`Some(true)`: single-valued).
    async fn predicate_cardinality(&self, actor: &Actor, predicate: &str) -> Result<Option<bool>>;
    async fn insert_predicate(
        &self,
        actor: &Actor,
        predicate: &str,
        single_valued: bool,
        at: Timestamp,
    ) -> Result<()>;

    /// Evidence the actor may see; `NotFound` for anything else (another team's id
    /// looks the same).
    async fn visible_evidence(&self, actor: &Actor, id: EvidenceId) -> Result<Evidence>;
    /// Inserts new evidence with its first lifecycle event (`reason`) and, when it is
    /// current, its search document.
    async fn insert_evidence(&self, evidence: &Evidence, reason: Option<&str>) -> Result<()>;
    /// Whether the actor can see a fragment (in any state but erased) of a revision of
    /// `source_key` newer than `revision`.
    async fn newer_revision_exists(
        &self,
        actor: &Actor,
        source_key: &str,
        revision: i64,
    ) -> Result<bool>;
    /// The current fragments of older revisions of `source_key` the actor can see.
    async fn older_current_revisions(
        &self,
        actor: &Actor,
        source_key: &str,
        revision: i64,
    ) -> Result<Vec<EvidenceId>>;
    /// Sets an evidence item's state and appends the lifecycle event.
    async fn set_evidence_state(
        &self,
        actor: &Actor,
        id: EvidenceId,
        state: LifecycleState,
        at: Timestamp,
        reason: Option<&str>,
    ) -> Result<()>;
    /// Physically erases an item's content and everything derived from it (search
    /// entries, vectors, refs, quotes of it in supports), leaves the row as a
    /// content-free tombstone and appends the `erased` event.
    async fn erase_evidence(&self, actor: &Actor, evidence: &Evidence, at: Timestamp)
        -> Result<()>;

    /// Relationships citing any of `evidence`, in id order, each once.
    async fn relationships_citing(
        &self,
        actor: &Actor,
        evidence: &[EvidenceId],
    ) -> Result<Vec<RelationshipId>>;
    /// `RelationshipNotFound` when the relationship is not the team's.
    async fn standing(&self, actor: &Actor, id: RelationshipId) -> Result<Standing>;
    /// The standing of each cited evidence item.
    async fn support_standings(
        &self,
        actor: &Actor,
        id: RelationshipId,
    ) -> Result<Vec<SupportStanding>>;
    /// Whether any cited evidence item is not erased.
    async fn has_unerased_support(&self, actor: &Actor, id: RelationshipId) -> Result<bool>;
    /// Writes the standing columns and bumps the version; `closed_at` sets
    /// `recorded_to` (cleared when `None`).
    async fn update_standing(
        &self,
        actor: &Actor,
        id: RelationshipId,
        to: Standing,
        closed_at: Option<Timestamp>,
    ) -> Result<()>;
    async fn append_transition(&self, actor: &Actor, transition: &Transition<'_>) -> Result<()>;
    /// Other claims about `subject` with `predicate`, in id order.
    async fn rivals(
        &self,
        actor: &Actor,
        subject: EntityId,
        predicate: &str,
        except: RelationshipId,
    ) -> Result<Vec<Rival>>;
    /// The authoritative record; `RelationshipNotFound` when it is not the team's.
    async fn relationship(&self, actor: &Actor, id: RelationshipId) -> Result<Relationship>;
    /// The relationship row, its supports and its verification events.
    async fn insert_relationship(&self, actor: &Actor, row: &NewRelationship<'_>) -> Result<()>;
    /// Writes the erasure tombstone, then deletes the relationship, its supports, logs
    /// and discovery document.
    async fn erase_relationship(
        &self,
        actor: &Actor,
        id: RelationshipId,
        at: Timestamp,
    ) -> Result<()>;
    /// Whether any relationship names the entity as subject or object.
    async fn entity_in_use(&self, actor: &Actor, id: EntityId) -> Result<bool>;
    /// Deletes an entity, its aliases and its discovery document.
    async fn erase_entity(&self, actor: &Actor, id: EntityId) -> Result<()>;

    /// Entities whose name or an alias normalises to `normalised`, of `kind` (any kind
    /// for `other`), in id order.
    async fn entities_matching(
        &self,
        actor: &Actor,
        normalised: &str,
        kind: EntityKind,
    ) -> Result<Vec<EntitySummary>>;
    async fn insert_entity(
        &self,
        actor: &Actor,
        entity: &EntitySummary,
        kind: EntityKind,
        at: Timestamp,
    ) -> Result<()>;
    /// Adds `(alias, normalised alias)` pairs, ignoring those already known.
    async fn insert_aliases(
        &self,
        actor: &Actor,
        id: EntityId,
        aliases: &[(String, String)],
    ) -> Result<()>;
    /// An entity's name, kind and aliases (in normalised order).
    async fn entity_names(&self, actor: &Actor, id: EntityId) -> Result<EntityNames>;
    /// Queues a discovery document for embedding, unless the same text is queued or
    /// embedded already.
    async fn enqueue_discovery_document(
        &self,
        team: TeamId,
        target: DiscoveryDocument,
        text: &str,
        at: Timestamp,
    ) -> Result<()>;
}

/// What a discovery document describes (evidence has search documents of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryDocument {
    Entity(EntityId),
    Relationship(RelationshipId),
}

/// What a relationship row says besides its endpoints; never changed after the write.
pub struct Claim<'a> {
    pub predicate: &'a str,
    pub predicate_surface: &'a str,
    pub polarity: Polarity,
    pub valid_from: Option<Timestamp>,
    pub valid_to: Option<Timestamp>,
}

impl<'a> From<&'a Proposal> for Claim<'a> {
    fn from(proposal: &'a Proposal) -> Self {
        Self {
            predicate: &proposal.predicate,
            predicate_surface: &proposal.predicate_surface,
            polarity: proposal.polarity,
            valid_from: proposal.valid_from,
            valid_to: proposal.valid_to,
        }
    }
}

/// A relationship as decided, ready to insert.
pub struct NewRelationship<'a> {
    pub id: RelationshipId,
    pub claim: Claim<'a>,
    pub subject: EntityId,
    pub object: &'a ObjectSummary,
    /// The typed value as JSON, for value objects.
    pub object_value: Option<String>,
    pub semantic_group_key: String,
    pub supersedes: Option<RelationshipId>,
    pub verdict: Verdict,
    pub standing: Standing,
    pub recorded_at: Timestamp,
    pub supports: &'a [Support],
    pub events: &'a [VerificationEvent],
}

/// A cited span of evidence, with the quote it covers.
pub struct Support {
    pub evidence_id: EvidenceId,
    pub start: usize,
    pub end: usize,
    pub quote: String,
}

/// One appended lifecycle step of a relationship (`from` is `None` at birth).
pub struct Transition<'a> {
    pub relationship_id: RelationshipId,
    pub from: Option<Standing>,
    pub to: Standing,
    pub reason: &'a str,
    pub at: Timestamp,
}

pub struct EntityNames {
    pub name: String,
    pub kind: String,
    pub aliases: Vec<String>,
}

/// Re-derives a relationship's standing from its supports.
pub(super) async fn recompute_support<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    id: RelationshipId,
    reason: &str,
    at: Timestamp,
) -> Result<()> {
    let current = rows.standing(actor, id).await?;
    let next = recomputed_standing(current, &rows.support_standings(actor, id).await?);
    move_to(rows, actor, id, next, reason, at).await
}

/// Updates the standing and appends the transition together; no-op when the standing
/// does not change. Leaving the live statuses closes `recorded_to`.
pub(super) async fn move_to<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    id: RelationshipId,
    to: Standing,
    reason: &str,
    at: Timestamp,
) -> Result<()> {
    let from = rows.standing(actor, id).await?;
    if from == to {
        return Ok(());
    }
    let closes = matches!(
        to.status,
        RelationshipStatus::Superseded | RelationshipStatus::Retracted
    );
    rows.update_standing(actor, id, to, closes.then_some(at))
        .await?;
    let transition = Transition {
        relationship_id: id,
        from: Some(from),
        to,
        reason,
        at,
    };
    rows.append_transition(actor, &transition).await
}

/// Keeps a relationship's tier and moves it to `status`.
pub(super) async fn move_status<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    id: RelationshipId,
    status: RelationshipStatus,
    reason: &str,
    at: Timestamp,
) -> Result<()> {
    let tier = rows.standing(actor, id).await?.tier;
    move_to(rows, actor, id, Standing { tier, status }, reason, at).await
}
