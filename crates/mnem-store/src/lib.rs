//! The storage boundary. A backend persists evidence and produces recall candidates with
//! every eligibility rule pushed into its own query; it does not rank (the core does, in
//! `mnem_core::pipeline`, driven by the service layer).
//!
//! Architecture invariant: nothing here knows SQL or a transport; backends depend on
//! this crate, never the reverse.

pub mod dedup;
pub mod graph_write;
pub mod pack;
pub mod trace_read;

use std::collections::{HashMap, HashSet};
use std::future::Future;

use mnem_core::dedup::Provenance;
use mnem_core::feedback::{RecallFeedback, Usage};
use mnem_core::graph::{
    Adjacency, Community, DetectedCommunity, GraphEdge, Hypothesis, HypothesisStatus, ModelReading,
    ObjectSummary, Proposal, ProposedHypothesis, Relationship, RelationshipOutcome,
    RememberOutcome, Trace, ValidRemember, Verdict, VerificationEvent,
};
use mnem_core::hop::MentionRead;
use mnem_core::pack::{Pack, PackSelection};
use mnem_core::signals::Support;
use mnem_core::{
    Access, Actor, ApiKeyRecord, Candidate, Clock, EmbeddingContract, EntityId, Evidence,
    EvidenceId, HypothesisId, LifecycleEvent, Neighbours, NewEvidence, ProfileId, RecallQuery,
    RelationshipId, Scope, TeamId, Timestamp, ValidationError,
};
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use dedup::{NewRecord, Remembered};
pub use pack::{ImportMode, PackImport};
use uuid::Uuid;

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// Also what another team's id looks like: existence never leaks across teams.
    #[error("evidence {id} not found")]
    NotFound { id: EvidenceId },
    #[error("store schema version {found} is newer than this build understands ({supported}); upgrade mnem")]
    SchemaTooNew { found: i64, supported: i64 },
    #[error("this store's vectors were made with {stored}, but the active embedder is {active}; run `mnem reindex` to re-embed with it, or select the recorded embedder")]
    ContractMismatch { stored: String, active: String },
    /// Another team's relationship looks the same: existence never leaks.
    #[error("relationship {id} not found")]
    RelationshipNotFound { id: RelationshipId },
    /// Another team's hypothesis looks the same.
    #[error("hypothesis {id} not found")]
    HypothesisNotFound { id: HypothesisId },
    /// The request cannot apply to the current state (an idempotency key reused with a
    /// different request, a stale version fence).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The operation is not allowed on this record (forgetting team evidence, or another
    /// profile's).
    #[error("evidence {id} cannot be {action}: {reason}")]
    NotPermitted {
        id: EvidenceId,
        action: &'static str,
        reason: String,
    },
    #[error("team `{name}` does not exist; create it with `mnem team create {name}`")]
    TeamNotFound { name: String },
    #[error("API key `{prefix}` not found")]
    KeyNotFound { prefix: String },
    /// A memory pack that cannot be read or replayed, naming its line.
    #[error(transparent)]
    Pack(#[from] mnem_core::pack::PackError),
    /// Another writer held the store past the wait (an embedded store has one writer at
    /// a time; a long pack import is one transaction): nothing was written, and the same
    /// call may simply be retried.
    #[error("the store is busy with another writer; nothing was written, retry shortly")]
    Busy,
    /// An export with a byte bound passed it while reading: stopped there, not built
    /// whole. `reached` is what the lines read so far already take.
    #[error("the pack is over {max_bytes} bytes (at least {reached})")]
    PackOverBound { max_bytes: usize, reached: usize },
    #[error("storage backend failed: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    pub fn backend(err: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreError::Backend(Box::new(err))
    }
}

/// What every backend implements. Methods are async so the same trait fits an embedded
/// file and a networked database; every one takes the [`Actor`], so no call can be made
/// outside a team.
pub trait EvidenceStore: Send + Sync {
    /// The store's clock: stamps `recorded_at`, and is read once per recall for expiry.
    fn clock(&self) -> &dyn Clock;

    /// Resolves a team by name, creating it and its default profile on first use.
    fn open_team(&self, name: &str) -> impl Future<Output = Result<Actor>> + Send;

    /// Validates and commits one evidence item; it is searchable when this returns. A
    /// write that repeats a text the team holds ([`mnem_core::dedup`]) makes no second
    /// item: the answer is the stored item, with the write recorded beside it.
    fn remember(
        &self,
        actor: &Actor,
        new: NewEvidence,
    ) -> impl Future<Output = Result<Remembered>> + Send;

    /// Validates and commits several evidence items in one transaction (a bulk load or an
    /// import: one commit, not one per item). Either every item is stored, searchable when
    /// this returns and answered in the order given, or — an item invalid, or the write
    /// failing — none is. See [`batch_records`] for the validation. Repeated texts are
    /// settled as [`Self::remember`] settles one, an item may repeat an earlier one of the
    /// same batch.
    fn remember_batch(
        &self,
        actor: &Actor,
        items: Vec<NewEvidence>,
    ) -> impl Future<Output = Result<Vec<Remembered>>> + Send;

    /// Stores one recall feedback record of the actor's team. Its result ids are not
    /// checked here (the service checks the actor can see them).
    fn record_feedback(
        &self,
        actor: &Actor,
        feedback: RecallFeedback,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The team's recall feedback, newest first, at most `limit` records.
    fn feedback(
        &self,
        actor: &Actor,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<RecallFeedback>>> + Send;

    /// How often the team's feedback listed an item, and how it was judged. `NotFound`
    /// as [`Self::get`].
    fn usage(&self, actor: &Actor, id: EvidenceId) -> impl Future<Output = Result<Usage>> + Send;

    /// The writes recorded for an item the actor can see, by number (number 0 is its own
    /// first write); empty for an item written once. `NotFound` as [`Self::get`].
    fn writes(
        &self,
        actor: &Actor,
        id: EvidenceId,
    ) -> impl Future<Output = Result<Vec<Provenance>>> + Send;

    /// Reads one record in any lifecycle state (history is kept). Another team's id, or
    /// another profile's private evidence, is `NotFound`.
    fn get(&self, actor: &Actor, id: EvidenceId) -> impl Future<Output = Result<Evidence>> + Send;

    /// The newest `source_revision` stored for `source_key` among the evidence the actor
    /// can see, in any state but erased; `None` when there is none. What a re-import
    /// places a changed document after.
    fn newest_revision(
        &self,
        actor: &Actor,
        source_key: &str,
    ) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// The append-only lifecycle log of one record, oldest first.
    fn history(
        &self,
        actor: &Actor,
        id: EvidenceId,
    ) -> impl Future<Output = Result<Vec<LifecycleEvent>>> + Send;

    /// Tombstones current evidence: appends a `retracted` event; the row stays. Evidence
    /// that is not current (already retracted) is `NotFound`. Expiry does not protect
    /// from retraction. An item written more than once loses the actor's writes only
    /// and stays current while another stands (as [`GraphStore::retract_evidence`]).
    fn retract(
        &self,
        actor: &Actor,
        id: EvidenceId,
        reason: Option<String>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The lexical branch, or a listing when the query has no text: eligible candidates
    /// for a validated query at `now` (same team, visible space, current, unexpired, and
    /// every selector applied inside the backend's own query). Text returns its best
    /// `pool` matches best first, each with its relevance: `mnem_core::lexical`'s BM25 of
    /// the query's terms over the team's own texts (every backend the same number); a
    /// listing returns its first `pool` items in the order contract's order, unranked.
    fn lexical_candidates(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        now: Timestamp,
        pool: usize,
    ) -> impl Future<Output = Result<Vec<Candidate>>> + Send;

    /// Evidence windows: for each of `hits` that has a `source_key`, up to `window`
    /// evidence items on each side of it in its source group (group order: `observed_at`,
    /// then id), nearest first, each eligible by exactly the rules and selectors the
    /// lexical branch applies for `query` at `now`. Ineligible items are skipped, not
    /// counted. Hits without a `source_key` have no entry.
    fn neighbours(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        now: Timestamp,
        hits: Vec<Evidence>,
        window: usize,
    ) -> impl Future<Output = Result<HashMap<EvidenceId, Neighbours>>> + Send;

    /// The distinct scopes of the evidence a listing of `query` could return at `now` (the
    /// lexical branch's eligibility rules and selectors: `scope` with
    /// `include_descendants` reads one scope and those under it), in path order, at most
    /// `limit`. What an agent framework's "list namespaces" reads.
    fn scopes(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        now: Timestamp,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Scope>>> + Send;

    /// How many of the team's current texts were observed inside `query`'s period
    /// (`since`, `until`; no other selector), counted up to `cap`: what a recall reads to
    /// tell a short period of a long history ([`mnem_core::SMALL_PERIOD`]). `None` when
    /// the query has no period or reads the past (`known_at`).
    fn texts_in_period(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        cap: usize,
    ) -> impl Future<Output = Result<Option<usize>>> + Send;

    /// The entity hop's read (`mnem_core::hop`): for each of `keys` that some stored text
    /// of the team mentions (`mnem_core::mention`), how many do — counted up to
    /// `max_items + 1`, enough to call it a hub — and, when at most `max_items` do, those
    /// eligible by exactly the rules and selectors the lexical branch applies for `query`
    /// at `now`, with the records of those not in `known`. Keys no text mentions have no
    /// entry.
    fn mentioned(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        now: Timestamp,
        keys: Vec<String>,
        max_items: usize,
        known: HashSet<EvidenceId>,
    ) -> impl Future<Output = Result<MentionRead>> + Send;

    /// Runs `reads`, the reads a ranked recall makes once its branches are in (the
    /// support signal, the entity hop, neighbours, discovery), so the backend may answer
    /// them together: from one snapshot of the team, in one transaction. The default runs
    /// them as they are. A backend that holds a connection for them serves every read
    /// `reads` makes of [`EvidenceStore::mentioned`], [`EvidenceStore::neighbours`],
    /// [`GraphStore::evidence_support`], [`GraphStore::entities_named`],
    /// [`GraphStore::adjacency`], [`GraphStore::edges_supported_by`] and
    /// [`GraphStore::graph_vector_seeds`] from it, and `reads` makes no other (another
    /// would wait for a second connection while holding the first).
    fn reading_together<F>(&self, actor: &Actor, reads: F) -> impl Future<Output = F::Output> + Send
    where
        F: Future + Send,
        F::Output: Send,
    {
        let _ = actor;
        reads
    }
}

/// A relationship proposal with its verification done: the events to append and the
/// verdict they add up to.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedProposal {
    pub proposal: Proposal,
    pub events: Vec<VerificationEvent>,
    pub verdict: Verdict,
}

/// A structured remember ready to commit.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedRemember {
    pub request: ValidRemember,
    /// One per `request.relationships`, in order.
    pub relationships: Vec<VerifiedProposal>,
}

/// A new version of a relationship, verified; the subject (and, unless the correction
/// changes it, the object) are the old record's.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedCorrection {
    pub relationship_id: RelationshipId,
    pub expected_version: i64,
    pub proposal: VerifiedProposal,
    /// `Some` keeps the old object; `None` resolves `proposal.object`.
    pub kept_object: Option<ObjectSummary>,
    pub reason: String,
}

/// The time view of a graph read: relationships valid at `valid_at`, as the system knew
/// them at `known_at` (both default to now).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GraphView {
    pub valid_at: Option<Timestamp>,
    pub known_at: Option<Timestamp>,
}

/// The semantic layer's storage: entities, relationships, their append-only logs, and
/// the bounded reads discovery needs. Decisions (standing, conflicts, path choice) are
/// `mnem_core::graph`'s; a backend reads the facts they need inside its transaction,
/// calls them, and writes what they decide.
pub trait GraphStore: EvidenceStore {
    /// Resolves a profile of a team by name, creating both on first use.
    fn open_profile(&self, team: &str, profile: &str)
        -> impl Future<Output = Result<Actor>> + Send;

    /// The names of those of `ids` that are profiles of the actor's team (another
    /// team's id has none), in id order.
    fn profile_names(
        &self,
        actor: &Actor,
        ids: Vec<ProfileId>,
    ) -> impl Future<Output = Result<Vec<(ProfileId, String)>>> + Send;

    /// The stored outcome of an earlier request with this idempotency key; `Conflict`
    /// when that request differed (its hash is not `request_hash`).
    fn replayed(
        &self,
        actor: &Actor,
        key: &str,
        request_hash: &str,
    ) -> impl Future<Output = Result<Option<RememberOutcome>>> + Send;

    /// Commits evidence and verified relationships in one transaction: entity resolution
    /// inside the team, source-revision supersession, standing, single-valued conflicts,
    /// supports, events, transitions, the idempotency record. Nothing is stored on error.
    fn commit_remember(
        &self,
        actor: &Actor,
        request: VerifiedRemember,
    ) -> impl Future<Output = Result<RememberOutcome>> + Send;

    /// Retracts the actor's writes of current evidence (all or nothing; every write when
    /// the actor made none, as an admin acting on another's item). An item whose other
    /// writes still stand stays current and is returned — one retraction never withdraws
    /// another writer's support; the rest are tombstoned and the standing of every
    /// relationship they support is recomputed.
    fn retract_evidence(
        &self,
        actor: &Actor,
        ids: Vec<EvidenceId>,
        reason: Option<String>,
    ) -> impl Future<Output = Result<Vec<EvidenceId>>> + Send;

    /// Holds current evidence out of recall and support (a screening or operator
    /// decision), recomputing what it supports.
    fn quarantine_evidence(
        &self,
        actor: &Actor,
        ids: Vec<EvidenceId>,
        reason: String,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Returns quarantined evidence to recall (an operator's decision after review):
    /// current again, or superseded if a newer revision of its source arrived meanwhile;
    /// what it supports is re-assessed. Evidence that is not quarantined is `Conflict`.
    fn release_evidence(
        &self,
        actor: &Actor,
        ids: Vec<EvidenceId>,
        reason: String,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Quarantined evidence the actor can see, most recently recorded first, at most
    /// `limit`: what screening or an operator is holding out of recall.
    fn quarantined(
        &self,
        actor: &Actor,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<EvidenceId>>> + Send;

    /// Physically erases the actor's own private evidence: text, search state, quotes,
    /// and relationships derived from nothing else; leaves a content-free tombstone.
    fn forget(
        &self,
        actor: &Actor,
        ids: Vec<EvidenceId>,
    ) -> impl Future<Output = Result<()>> + Send;

    fn relationship(
        &self,
        actor: &Actor,
        id: RelationshipId,
    ) -> impl Future<Output = Result<Relationship>> + Send;

    /// Writes a corrected version, fenced on `expected_version`; the old record is never
    /// changed in content (its owner's correction supersedes it).
    fn commit_correction(
        &self,
        actor: &Actor,
        correction: VerifiedCorrection,
    ) -> impl Future<Output = Result<RelationshipOutcome>> + Send;

    /// The authoritative explanation of one relationship, bounded.
    fn trace(
        &self,
        actor: &Actor,
        id: RelationshipId,
        view: GraphView,
    ) -> impl Future<Output = Result<Trace>> + Send;

    /// Entities of the actor's team whose normalised name or alias is one of `names`.
    fn entities_named(
        &self,
        actor: &Actor,
        names: Vec<String>,
    ) -> impl Future<Output = Result<Vec<(EntityId, String)>>> + Send;

    /// For each entity, its discoverable relationships (either end) under `view`, at
    /// most `fanout`, newest first; `hub` when there were more.
    fn adjacency(
        &self,
        actor: &Actor,
        entities: Vec<EntityId>,
        view: GraphView,
        fanout: usize,
    ) -> impl Future<Output = Result<Vec<Adjacency>>> + Send;

    /// Discovery seeds by meaning: entities whose document, or whose discoverable
    /// relationships' documents, have a current vector under `contract` with cosine
    /// similarity at least `min_similarity` to `vector`; the best `limit` entities with
    /// their best similarity, best first.
    fn graph_vector_seeds(
        &self,
        actor: &Actor,
        vector: &[f32],
        contract: &EmbeddingContract,
        view: GraphView,
        min_similarity: f64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(EntityId, f64)>>> + Send;

    /// What memory says for each of `evidence` besides its text
    /// ([`mnem_core::signals::Support`]): the best tier among the discoverable
    /// relationships citing it under `view`, and the other source groups whose current
    /// writes of the same text are recorded (known by `view.known_at`). Items with nothing
    /// to say have no entry.
    fn evidence_support(
        &self,
        actor: &Actor,
        evidence: Vec<EvidenceId>,
        view: GraphView,
    ) -> impl Future<Output = Result<HashMap<EvidenceId, Support>>> + Send;

    /// The actor's memory as a memory pack ([`pack::export`]), read from one snapshot;
    /// with `max_bytes`, refused ([`StoreError::PackOverBound`]) as soon as it passes it.
    fn export_pack(
        &self,
        actor: &Actor,
        selection: PackSelection,
        max_bytes: Option<usize>,
    ) -> impl Future<Output = Result<Pack>> + Send;

    /// Replays a decoded pack into the actor's team in one transaction
    /// ([`pack::import`]): all of it, or on error nothing.
    fn import_pack(
        &self,
        actor: &Actor,
        pack: Pack,
        mode: ImportMode,
    ) -> impl Future<Output = Result<PackImport>> + Send;

    /// What a dream pass starts from ([`mnem_core::graph::dream`]): the team's
    /// discoverable relationships between two entities that a current team evidence item
    /// proves, newest first, at most `limit`.
    fn dream_inputs(
        &self,
        actor: &Actor,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Relationship>>> + Send;

    /// Keeps the proposed hypotheses the team does not hold yet (same two sources and
    /// rule), and writes `stale` on open ones whose source is no longer active.
    fn record_hypotheses(
        &self,
        actor: &Actor,
        proposed: Vec<ProposedHypothesis>,
    ) -> impl Future<Output = Result<HypothesisPass>> + Send;

    /// The team's hypotheses, newest first, with their status as it stands (an open one
    /// with an inactive source reads `stale`), as `filter` selects.
    fn hypotheses(
        &self,
        actor: &Actor,
        filter: HypothesisFilter,
    ) -> impl Future<Output = Result<Vec<Hypothesis>>> + Send;

    /// Confirms or rejects an open hypothesis; `HypothesisNotFound` for another team's
    /// id, `Conflict` when it is not open.
    fn resolve_hypothesis(
        &self,
        actor: &Actor,
        id: HypothesisId,
        resolution: HypothesisResolution,
    ) -> impl Future<Output = Result<Hypothesis>> + Send;

    /// Writes the optional chat model's reading of a hypothesis beside its statement,
    /// once: false (nothing written) when the hypothesis was read already — by another
    /// server too — or is not the team's.
    fn record_model_reading(
        &self,
        actor: &Actor,
        id: HypothesisId,
        reading: ModelReading,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Replaces the team's communities with `found` (computed from `relationships`
    /// eligible relationships) as the next version, in one transaction — unless
    /// `fingerprint` matches the latest computation's, when nothing changes.
    fn record_communities(
        &self,
        actor: &Actor,
        found: Vec<DetectedCommunity>,
        fingerprint: String,
        relationships: usize,
    ) -> impl Future<Output = Result<CommunityPass>> + Send;

    /// The team's current communities, as `filter` selects.
    fn communities(
        &self,
        actor: &Actor,
        filter: CommunityFilter,
    ) -> impl Future<Output = Result<Vec<Community>>> + Send;

    /// Discoverable relationships supported by any of `evidence`, at most `limit`.
    fn edges_supported_by(
        &self,
        actor: &Actor,
        evidence: Vec<EvidenceId>,
        view: GraphView,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<GraphEdge>>> + Send;
}

/// What a dream pass stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct HypothesisPass {
    /// Proposals the team did not hold yet.
    pub added: usize,
    /// Open hypotheses written `stale` because a source is no longer active.
    pub staled: usize,
}

/// What a community computation stored (the caller knows how many it found).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CommunityPass {
    /// The team's community version after the pass (0: never computed).
    pub version: i64,
    /// False when the communities found were the ones already held.
    pub changed: bool,
}

/// What a community pass does once it has read the team's latest run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommunityStep {
    /// The same communities as the latest run (same fingerprint): nothing is written.
    Unchanged(CommunityPass),
    /// Write the communities as this version.
    Write { version: i64 },
}

impl CommunityPass {
    /// Decides a pass from the team's latest run (`version`, `fingerprint`), if any.
    pub fn plan(latest: Option<(i64, String)>, fingerprint: &str) -> CommunityStep {
        match latest {
            Some((version, held)) if held == fingerprint => CommunityStep::Unchanged(Self {
                version,
                changed: false,
            }),
            Some((version, _)) => CommunityStep::Write {
                version: version + 1,
            },
            None => CommunityStep::Write { version: 1 },
        }
    }

    /// A pass that wrote its communities as `version`.
    pub fn written(version: i64) -> Self {
        Self {
            version,
            changed: true,
        }
    }
}

/// Which communities a read returns: with `entities`, only those holding one of them
/// (the most matched first); otherwise all, largest first. At most `limit`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommunityFilter {
    pub entities: Option<Vec<EntityId>>,
    pub limit: usize,
}

/// Which hypotheses a read returns: with one of `statuses` (every status when empty), and
/// when set, with one of `ids`, or citing one of `relationships` as a source; with
/// `team_proven`, only those whose two sources a current team evidence item still proves
/// (what any member may be shown); with `unread_by_model`, only those the optional chat
/// model has not read yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HypothesisFilter {
    pub statuses: Vec<HypothesisStatus>,
    pub ids: Option<Vec<HypothesisId>>,
    pub relationships: Option<Vec<RelationshipId>>,
    pub team_proven: bool,
    pub unread_by_model: bool,
    pub limit: usize,
}

/// A person's decision on an open hypothesis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HypothesisResolution {
    /// `confirmed` or `rejected`.
    pub status: HypothesisStatus,
    pub reason: String,
    /// For `confirmed`: the relationships the confirming remember wrote.
    pub confirmed_by: Vec<RelationshipId>,
    pub at: Timestamp,
}

/// What a search document is derived from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DocumentTarget {
    Evidence(EvidenceId),
    /// Discovery only: an entity's names.
    Entity(EntityId),
    /// Discovery only: a relationship's endpoints and predicate (no evidence text).
    Relationship(RelationshipId),
}

/// A document waiting for its vector.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingDocument {
    pub team: TeamId,
    pub target: DocumentTarget,
    pub text: String,
}

/// How far derived search state lags committed evidence (operator telemetry).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchFreshness {
    pub pending_document_count: u64,
    pub failed_document_count: u64,
    pub current_document_count: u64,
    pub oldest_pending_age_seconds: Option<i64>,
}

/// A branch that was skipped, recorded for `mnem status` and the logs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Degradation {
    pub branch: String,
    pub reason: String,
    pub at: Timestamp,
}

/// Derived search state: vectors under an embedding contract, the embedding queue, and
/// the vector branch. Search documents are never authoritative; evidence is.
pub trait SearchIndex: Send + Sync {
    /// The contract the store's vectors were made under, if any.
    fn recorded_contract(&self) -> impl Future<Output = Result<Option<EmbeddingContract>>> + Send;

    /// Makes `contract` active. Refused with `ContractMismatch` when the store already
    /// records another one: switching models needs [`SearchIndex::reindex`].
    fn activate_contract(
        &self,
        contract: &EmbeddingContract,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Switches to `contract` and queues every document for re-embedding; returns how
    /// many were queued. Old vectors stay unused until replaced.
    fn reindex(&self, contract: &EmbeddingContract) -> impl Future<Output = Result<u64>> + Send;

    /// Up to `limit` pending documents, oldest first: evidence (current only) before the
    /// discovery documents of entities and relationships.
    fn pending_documents(
        &self,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<PendingDocument>>> + Send;

    /// Up to `limit` pending documents of one team, newest first: a one-shot command
    /// embeds its own write first and never waits on another team's backlog.
    fn team_pending_documents(
        &self,
        team: TeamId,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<PendingDocument>>> + Send;

    /// Stores vectors made under `contract` and marks their documents current.
    fn store_vectors(
        &self,
        contract: &EmbeddingContract,
        vectors: Vec<(PendingDocument, Vec<f32>)>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Counts a failed attempt per document; after `max_attempts` it is `failed`.
    fn record_failures(
        &self,
        failures: Vec<(PendingDocument, String)>,
        max_attempts: u32,
    ) -> impl Future<Output = Result<()>> + Send;

    fn freshness(&self, now: Timestamp) -> impl Future<Output = Result<SearchFreshness>> + Send;

    /// The vector branch: eligible candidates (the same rules as the lexical branch,
    /// inside the backend's query) with a current vector under `contract`, best `pool`
    /// by cosine similarity to `vector`, best first, similarity as relevance.
    fn vector_candidates(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        vector: &[f32],
        contract: &EmbeddingContract,
        now: Timestamp,
        pool: usize,
    ) -> impl Future<Output = Result<Vec<Candidate>>> + Send;

    fn record_degradation(
        &self,
        degradation: Degradation,
    ) -> impl Future<Output = Result<()>> + Send;

    fn last_degradation(&self) -> impl Future<Output = Result<Option<Degradation>>> + Send;
}

/// The wall clock, truncated to microseconds.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_datetime(time::OffsetDateTime::now_utc())
    }
}

/// A UUIDv7 whose time part is `at`, so ids sort with the store's own clock.
pub fn new_uuid_v7(at: Timestamp) -> Uuid {
    let micros = at.as_micros().max(0) as u64;
    let ts = uuid::Timestamp::from_unix(
        uuid::NoContext,
        micros / 1_000_000,
        ((micros % 1_000_000) * 1_000) as u32,
    );
    Uuid::new_v7(ts)
}

/// The most items one [`EvidenceStore::remember_batch`] takes: a transaction's size and
/// the memory a request holds stay bounded.
pub const MAX_BATCH_ITEMS: usize = 10_000;

/// One plain write validated into a record: stamped by one clock reading, with the reason
/// screening holds it, if it does. Errors name the field as written (`content`).
pub fn new_record(
    clock: &dyn Clock,
    actor: &Actor,
    new: NewEvidence,
) -> Result<NewRecord, ValidationError> {
    let recorded_at = clock.now();
    let hold = new.quarantine.clone();
    let evidence = new.into_evidence(
        EvidenceId(new_uuid_v7(recorded_at)),
        actor.team,
        actor.profile,
        recorded_at,
    )?;
    Ok(NewRecord {
        evidence,
        hold,
        exact_text: false,
    })
}

/// A batch's records, every item validated ([`new_record`]) before anything is written:
/// each stamped by a clock reading of its own (so items without `observed_at` keep the
/// batch's order). An invalid item is named by its position (`items[3].content`); more
/// than [`MAX_BATCH_ITEMS`] is refused whole.
pub fn batch_records(
    clock: &dyn Clock,
    actor: &Actor,
    items: Vec<NewEvidence>,
) -> Result<Vec<NewRecord>> {
    if items.len() > MAX_BATCH_ITEMS {
        return Err(ValidationError::new(
            "items",
            format!(
                "holds {} items; at most {MAX_BATCH_ITEMS} per batch",
                items.len()
            ),
        )
        .into());
    }
    items
        .into_iter()
        .enumerate()
        .map(|(index, new)| {
            new_record(clock, actor, new).map_err(|e| {
                ValidationError::new(format!("items[{index}].{}", e.field), e.reason).into()
            })
        })
        .collect()
}

/// Team names are how a human selects a tenant (`--team`); keep them printable and short.
pub fn validate_team_name(name: &str) -> Result<&str, ValidationError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(ValidationError::new(
            "team",
            "must be 1 to 64 printable characters",
        ));
    }
    Ok(name)
}

/// Profile names identify a person or agent inside a team; the same rules as team names.
pub fn validate_profile_name(name: &str) -> Result<&str, ValidationError> {
    validate_team_name(name).map_err(|e| ValidationError::new("profile", e.reason))
}

/// A key to store: everything but the token's secret, of which only the hash is kept.
#[derive(Debug, Clone)]
pub struct NewApiKey {
    pub prefix: String,
    pub team: String,
    pub profile: String,
    pub access: Access,
    pub secret_hash: String,
    pub expires_at: Option<Timestamp>,
}

/// Teams and API keys: what the server authenticates against. Kept apart from the memory
/// traits so a transport that serves one local principal never needs it.
pub trait CredentialStore: Send + Sync {
    /// Creates a team; `Conflict` when the name is taken.
    fn create_team(&self, name: &str) -> impl Future<Output = Result<TeamId>> + Send;

    /// Stores a key for an existing team (`TeamNotFound` otherwise), creating the profile
    /// on first use.
    fn insert_key(&self, key: NewApiKey) -> impl Future<Output = Result<ApiKeyRecord>> + Send;

    /// The key with this public prefix, revoked and expired ones included.
    fn api_key(&self, prefix: &str) -> impl Future<Output = Result<Option<ApiKeyRecord>>> + Send;

    /// Marks the key revoked from now on; revoking twice keeps the first instant.
    fn revoke_key(&self, prefix: &str) -> impl Future<Output = Result<ApiKeyRecord>> + Send;

    /// Every key of a team, newest first (secrets are never stored, hashes are included).
    fn team_keys(&self, team: &str) -> impl Future<Output = Result<Vec<ApiKeyRecord>>> + Send;
}
