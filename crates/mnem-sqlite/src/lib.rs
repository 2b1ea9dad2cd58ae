//! The embedded backend: one SQLite file in WAL mode, FTS5 for full text, versioned
//! migrations. It persists evidence and produces recall candidates with every eligibility
//! rule inside its SQL; ranking happens in `mnem-core`.
//!
//! Architecture invariant: every statement filters on `team_id`, and no user text is ever
//! spliced into SQL or read as FTS5 syntax.

mod ann;
mod candidates;
mod fts;
mod migrations;
mod rows;
mod search;

use std::path::Path;
use std::sync::{Arc, Mutex};

use mnem_core::{
    Actor, Candidate, Clock, EmbeddingContract, Evidence, EvidenceId, LifecycleEvent,
    LifecycleState, NewEvidence, ProfileId, RecallQuery, TeamId, Timestamp,
};
use mnem_store::{
    new_uuid_v7, validate_team_name, Degradation, EvidenceStore, PendingDocument, Result,
    SearchFreshness, SearchIndex, StoreError,
};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

pub use migrations::SCHEMA_VERSION;
use rows::{evidence_from_row, UuidBytes, EVIDENCE_COLUMNS, EVIDENCE_FROM};

/// The profile `open_team` creates with a team and acts as.
pub const DEFAULT_PROFILE: &str = "default";

/// Converts rusqlite errors at the crate boundary.
pub(crate) trait DbResult<T> {
    fn db(self) -> Result<T>;
}

impl<T> DbResult<T> for rusqlite::Result<T> {
    fn db(self) -> Result<T> {
        self.map_err(StoreError::backend)
    }
}

/// A SQLite-backed evidence store. Cheap to clone; clones share one connection, and every
/// call runs on tokio's blocking pool so an async caller is never stalled by disk I/O.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    clock: Arc<dyn Clock>,
    /// Approximate vector search for teams with at least this many vectors; `None` scans
    /// exactly. Worth it only in long-lived processes: the graph is built in memory.
    ann: Option<(Arc<ann::AnnIndexes>, usize)>,
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path` and brings its schema up to date.
    pub fn open(path: &Path, clock: Arc<dyn Clock>) -> Result<Self> {
        let conn = Connection::open(path).db()?;
        Self::from_connection(conn, clock)
    }

    /// A private in-memory store, for tests and throwaway runs.
    pub fn open_in_memory(clock: Arc<dyn Clock>) -> Result<Self> {
        Self::from_connection(Connection::open_in_memory().db()?, clock)
    }

    fn from_connection(mut conn: Connection, clock: Arc<dyn Clock>) -> Result<Self> {
        // WAL lets readers proceed during a write; NORMAL sync is durable across
        // application crashes and only risks the last transactions on power loss.
        let _mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .db()?;
        conn.pragma_update(None, "synchronous", "NORMAL").db()?;
        conn.pragma_update(None, "foreign_keys", "ON").db()?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).db()?;
        migrations::migrate(&mut conn)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            clock,
            ann: None,
        })
    }

    /// Documents in this store's in-memory vector graphs (0 when ANN is off or unused).
    pub fn ann_indexed_documents(&self) -> usize {
        self.ann
            .as_ref()
            .map_or(0, |(indexes, _)| indexes.indexed_documents())
    }

    /// Enables the HNSW vector index for teams with at least `threshold` current vectors.
    pub fn with_ann_threshold(mut self, threshold: usize) -> Self {
        self.ann = Some((Arc::new(ann::AnnIndexes::default()), threshold));
        self
    }

    /// Runs `work` with the connection on the blocking pool.
    async fn with_conn<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let mut guard = conn
                .lock()
                .map_err(|_| StoreError::Backend("sqlite connection lock poisoned".into()))?;
            work(&mut guard)
        })
        .await
        .map_err(StoreError::backend)?
    }
}

impl EvidenceStore for SqliteStore {
    fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    async fn open_team(&self, name: &str) -> Result<Actor> {
        let name = validate_team_name(name)?.to_string();
        let now = self.clock.now();
        self.with_conn(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .db()?;
            let existing = tx
                .query_row(
                    "SELECT t.team_id, p.profile_id FROM teams t \
                     JOIN profiles p ON p.team_id = t.team_id AND p.name = ?2 \
                     WHERE t.name = ?1",
                    params![name, DEFAULT_PROFILE],
                    |row| Ok((row.get::<_, UuidBytes>(0)?, row.get::<_, UuidBytes>(1)?)),
                )
                .optional()
                .db()?;
            let actor = match existing {
                Some((team, profile)) => Actor {
                    team: TeamId::from_bytes(team.0),
                    profile: ProfileId::from_bytes(profile.0),
                },
                None => {
                    let actor = Actor {
                        team: TeamId(new_uuid_v7(now)),
                        profile: ProfileId(new_uuid_v7(now)),
                    };
                    tx.execute(
                        "INSERT INTO teams (team_id, name, created_at) VALUES (?1, ?2, ?3)",
                        params![actor.team.as_bytes(), name, now.as_micros()],
                    )
                    .db()?;
                    tx.execute(
                        "INSERT INTO profiles (team_id, profile_id, name, created_at) \
                         VALUES (?1, ?2, ?3, ?4)",
                        params![
                            actor.team.as_bytes(),
                            actor.profile.as_bytes(),
                            DEFAULT_PROFILE,
                            now.as_micros()
                        ],
                    )
                    .db()?;
                    actor
                }
            };
            tx.commit().db()?;
            Ok(actor)
        })
        .await
    }

    async fn remember(&self, actor: &Actor, new: NewEvidence) -> Result<Evidence> {
        let recorded_at = self.clock.now();
        let evidence = new.into_evidence(
            EvidenceId(new_uuid_v7(recorded_at)),
            actor.team,
            actor.profile,
            recorded_at,
        )?;
        self.with_conn(move |conn| {
            let tx = conn.transaction().db()?;
            insert_evidence(&tx, &evidence)?;
            tx.commit().db()?;
            Ok(evidence)
        })
        .await
    }

    async fn get(&self, actor: &Actor, id: EvidenceId) -> Result<Evidence> {
        let actor = *actor;
        self.with_conn(move |conn| visible_evidence(conn, &actor, id))
            .await
    }

    async fn history(&self, actor: &Actor, id: EvidenceId) -> Result<Vec<LifecycleEvent>> {
        let actor = *actor;
        self.with_conn(move |conn| {
            visible_evidence(conn, &actor, id)?;
            let mut stmt = conn
                .prepare_cached(
                    "SELECT state, at, actor_profile_id, reason FROM evidence_events \
                     WHERE team_id = ?1 AND evidence_id = ?2 ORDER BY seq",
                )
                .db()?;
            let events = stmt
                .query_map(params![actor.team.as_bytes(), id.as_bytes()], |row| {
                    let state: String = row.get(0)?;
                    Ok((state, row.get(1)?, row.get::<_, UuidBytes>(2)?, row.get(3)?))
                })
                .db()?
                .map(|row| {
                    let (state, at, profile, reason) = row.db()?;
                    Ok(LifecycleEvent {
                        state: state.parse()?,
                        at: Timestamp::from_micros(at),
                        actor: ProfileId::from_bytes(profile.0),
                        reason,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(events)
        })
        .await
    }

    async fn retract(&self, actor: &Actor, id: EvidenceId, reason: Option<String>) -> Result<()> {
        let actor = *actor;
        let at = self.clock.now();
        self.with_conn(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .db()?;
            let evidence = visible_evidence(&tx, &actor, id)?;
            if evidence.state != LifecycleState::Current {
                return Err(StoreError::NotFound { id });
            }
            tx.execute(
                "UPDATE evidence SET state = ?3 WHERE team_id = ?1 AND evidence_id = ?2",
                params![
                    actor.team.as_bytes(),
                    id.as_bytes(),
                    LifecycleState::Retracted.as_str()
                ],
            )
            .db()?;
            append_event(
                &tx,
                &actor,
                id,
                LifecycleState::Retracted,
                at,
                reason.as_deref(),
            )?;
            tx.commit().db()?;
            Ok(())
        })
        .await
    }

    async fn lexical_candidates(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        now: Timestamp,
        pool: usize,
    ) -> Result<Vec<Candidate>> {
        let actor = *actor;
        let query = query.clone();
        self.with_conn(move |conn| candidates::lexical(conn, &actor, &query, now, pool).db())
            .await
    }
}

impl SearchIndex for SqliteStore {
    async fn recorded_contract(&self) -> Result<Option<EmbeddingContract>> {
        self.with_conn(|conn| search::recorded_contract(conn)).await
    }

    async fn activate_contract(&self, contract: &EmbeddingContract) -> Result<()> {
        let contract = contract.clone();
        self.with_conn(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .db()?;
            search::activate_contract(&tx, &contract)?;
            tx.commit().db()
        })
        .await
    }

    async fn reindex(&self, contract: &EmbeddingContract) -> Result<u64> {
        let contract = contract.clone();
        let now = self.clock.now();
        self.with_conn(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .db()?;
            let queued = search::reindex(&tx, &contract, now)?;
            tx.commit().db()?;
            Ok(queued)
        })
        .await
    }

    async fn pending_documents(&self, limit: usize) -> Result<Vec<PendingDocument>> {
        self.with_conn(move |conn| search::pending_documents(conn, limit))
            .await
    }

    async fn store_vectors(
        &self,
        contract: &EmbeddingContract,
        vectors: Vec<(PendingDocument, Vec<f32>)>,
    ) -> Result<()> {
        let contract = contract.clone();
        let now = self.clock.now();
        self.with_conn(move |conn| {
            let tx = conn.transaction().db()?;
            search::store_vectors(&tx, &contract, &vectors, now)?;
            tx.commit().db()
        })
        .await
    }

    async fn record_failures(
        &self,
        failures: Vec<(PendingDocument, String)>,
        max_attempts: u32,
    ) -> Result<()> {
        let now = self.clock.now();
        self.with_conn(move |conn| {
            let tx = conn.transaction().db()?;
            search::record_failures(&tx, &failures, max_attempts, now)?;
            tx.commit().db()
        })
        .await
    }

    async fn freshness(&self, now: Timestamp) -> Result<SearchFreshness> {
        self.with_conn(move |conn| search::freshness(conn, now))
            .await
    }

    async fn vector_candidates(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        vector: &[f32],
        contract: &EmbeddingContract,
        now: Timestamp,
        pool: usize,
    ) -> Result<Vec<Candidate>> {
        let actor = *actor;
        let query = query.clone();
        let vector = vector.to_vec();
        let key = contract.key();
        let ann = self.ann.clone();
        self.with_conn(move |conn| {
            let ann = ann
                .as_ref()
                .map(|(indexes, threshold)| (indexes.as_ref(), *threshold));
            candidates::vector(conn, &actor, &query, &vector, &key, now, pool, ann).db()
        })
        .await
    }

    async fn record_degradation(&self, degradation: Degradation) -> Result<()> {
        self.with_conn(move |conn| search::record_degradation(conn, &degradation))
            .await
    }

    async fn last_degradation(&self) -> Result<Option<Degradation>> {
        self.with_conn(|conn| search::last_degradation(conn)).await
    }
}

fn insert_evidence(tx: &rusqlite::Transaction<'_>, e: &Evidence) -> Result<()> {
    let labels = serde_json::to_string(&e.labels).map_err(StoreError::backend)?;
    let refs = serde_json::to_string(&e.refs).map_err(StoreError::backend)?;
    tx.execute(
        "INSERT INTO evidence (team_id, evidence_id, owner_profile_id, kind, source_type, \
         source, authority, source_group, source_key, source_revision, labels, refs, scope, \
         scope_depth, space, observed_at, recorded_at, expires_at, content_hash, state) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
         ?18, ?19, ?20)",
        params![
            e.team.as_bytes(),
            e.id.as_bytes(),
            e.owner.as_bytes(),
            e.kind,
            e.source_type.as_str(),
            e.source,
            e.authority.as_str(),
            e.source_group,
            e.source_key,
            e.source_revision,
            labels,
            refs,
            e.scope.to_path(),
            e.scope.depth() as i64,
            e.space.as_str(),
            e.observed_at.as_micros(),
            e.recorded_at.as_micros(),
            e.expires_at.map(Timestamp::as_micros),
            e.content_hash,
            e.state.as_str(),
        ],
    )
    .db()?;
    let doc = tx.last_insert_rowid();
    tx.execute(
        "INSERT INTO evidence_content (doc, team_id, content) VALUES (?1, ?2, ?3)",
        params![doc, e.team.as_bytes(), e.content],
    )
    .db()?;
    tx.execute(
        "INSERT INTO evidence_fts (rowid, content) VALUES (?1, ?2)",
        params![doc, e.content],
    )
    .db()?;
    search::enqueue(tx, doc, e.team, e.recorded_at)?;
    let mut insert_ref = tx
        .prepare_cached(
            "INSERT INTO evidence_refs (team_id, ref_kind, ref_id, evidence_id) \
             VALUES (?1, ?2, ?3, ?4)",
        )
        .db()?;
    for r in &e.refs {
        insert_ref
            .execute(params![e.team.as_bytes(), r.kind, r.id, e.id.as_bytes()])
            .db()?;
    }
    let actor = Actor {
        team: e.team,
        profile: e.owner,
    };
    append_event(tx, &actor, e.id, e.state, e.recorded_at, None)
}

fn append_event(
    tx: &rusqlite::Transaction<'_>,
    actor: &Actor,
    id: EvidenceId,
    state: LifecycleState,
    at: Timestamp,
    reason: Option<&str>,
) -> Result<()> {
    tx.execute(
        "INSERT INTO evidence_events (team_id, evidence_id, seq, state, actor_profile_id, at, \
         reason) VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM evidence_events \
         WHERE team_id = ?1 AND evidence_id = ?2), ?3, ?4, ?5, ?6)",
        params![
            actor.team.as_bytes(),
            id.as_bytes(),
            state.as_str(),
            actor.profile.as_bytes(),
            at.as_micros(),
            reason
        ],
    )
    .db()?;
    Ok(())
}

/// One record the actor may see, in any lifecycle state; otherwise `NotFound`, whether it
/// does not exist, belongs to another team, or is another profile's private evidence.
fn visible_evidence(conn: &Connection, actor: &Actor, id: EvidenceId) -> Result<Evidence> {
    conn.prepare_cached(&format!(
        "SELECT {EVIDENCE_COLUMNS} FROM {EVIDENCE_FROM} \
         WHERE e.team_id = ?1 AND e.evidence_id = ?2 \
         AND (e.space = 'team' OR e.owner_profile_id = ?3)"
    ))
    .db()?
    .query_row(
        params![
            actor.team.as_bytes(),
            id.as_bytes(),
            actor.profile.as_bytes()
        ],
        evidence_from_row,
    )
    .optional()
    .db()?
    .ok_or(StoreError::NotFound { id })
}
