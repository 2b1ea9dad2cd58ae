//! The storage boundary. A backend persists evidence and produces recall candidates with
//! every eligibility rule pushed into its own query; it does not rank. [`recall`] is the
//! one recall path: validate, read the clock once, fetch candidates, rank in the core.
//!
//! Architecture invariant: nothing here knows SQL or a transport; backends depend on
//! this crate, never the reverse.

use std::future::Future;

use mnem_core::{
    rank, Actor, Candidate, Clock, Evidence, EvidenceId, LifecycleEvent, NewEvidence, RecallHit,
    RecallQuery, Timestamp, ValidationError,
};
use thiserror::Error;
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

    /// Validates and commits one evidence item; it is searchable when this returns.
    fn remember(
        &self,
        actor: &Actor,
        new: NewEvidence,
    ) -> impl Future<Output = Result<Evidence>> + Send;

    /// Reads one record in any lifecycle state (history is kept). Another team's id, or
    /// another profile's private evidence, is `NotFound`.
    fn get(&self, actor: &Actor, id: EvidenceId) -> impl Future<Output = Result<Evidence>> + Send;

    /// The append-only lifecycle log of one record, oldest first.
    fn history(
        &self,
        actor: &Actor,
        id: EvidenceId,
    ) -> impl Future<Output = Result<Vec<LifecycleEvent>>> + Send;

    /// Tombstones current evidence: appends a `retracted` event; the row stays. Evidence
    /// that is not current (already retracted) is `NotFound`. Expiry does not protect
    /// from retraction.
    fn retract(
        &self,
        actor: &Actor,
        id: EvidenceId,
        reason: Option<String>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Eligible candidates for a validated query at `now`: same team, visible space,
    /// current, unexpired, and every selector of the query applied inside the backend's
    /// own query. A text query returns its best `query.candidate_pool()` matches by the
    /// backend's relevance, with that relevance attached; a listing returns its first
    /// `candidate_pool()` items in the order contract's order, unranked.
    fn candidates(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        now: Timestamp,
    ) -> impl Future<Output = Result<Vec<Candidate>>> + Send;
}

/// The recall path every transport uses: validate, one clock reading, candidates from the
/// backend, ranking in the core.
pub async fn recall<S: EvidenceStore>(
    store: &S,
    actor: &Actor,
    query: RecallQuery,
) -> Result<Vec<RecallHit>> {
    let query = query.validated()?;
    let now = store.clock().now();
    let candidates = store.candidates(actor, &query, now).await?;
    Ok(rank(candidates, &query, actor, now))
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
