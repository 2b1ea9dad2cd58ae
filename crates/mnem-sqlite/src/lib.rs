//! The embedded backend: one SQLite file in WAL mode, FTS5 for full text, versioned
//! migrations. It persists evidence and produces recall candidates with every eligibility
//! rule inside its SQL; ranking happens in `mnem-core`.
//!
//! Architecture invariant: every statement filters on `team_id`, and no user text is ever
//! spliced into SQL or read as FTS5 syntax.

mod ann;
mod communities;
mod credentials;
mod dedup;
mod embedding_queue;
mod feedback;
mod graph;
mod hypotheses;
mod lexical;
mod mentions;
mod migrations;
mod pack;
mod read_scope;
mod recall_branches;
mod rows;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use graph::SqliteRows;
use mnem_core::dedup::Provenance;
use mnem_core::feedback::{RecallFeedback, Usage};
use mnem_core::graph::{
    Adjacency, Community, DetectedCommunity, GraphEdge, Hypothesis, ModelReading,
    ProposedHypothesis, Relationship, RelationshipOutcome, RememberOutcome, Trace,
};
use mnem_core::hop::MentionRead;
use mnem_core::pack::{Pack, PackSelection};
use mnem_core::signals::Support;
use mnem_core::{
    Actor, Candidate, Clock, EmbeddingContract, EntityId, Evidence, EvidenceId, HypothesisId,
    LifecycleEvent, LifecycleState, Neighbours, NewEvidence, ProfileId, RecallQuery,
    RelationshipId, Scope, TeamId, Timestamp,
};
use mnem_store::dedup::{NewRecord, Settled};
use mnem_store::{batch_records, graph_write, new_record, trace_read, Remembered};
use mnem_store::{
    new_uuid_v7, validate_profile_name, validate_team_name, CommunityFilter, CommunityPass,
    Degradation, EvidenceStore, GraphStore, GraphView, HypothesisFilter, HypothesisPass,
    HypothesisResolution, ImportMode, PackImport, PendingDocument, Result, SearchFreshness,
    SearchIndex, StoreError, VerifiedCorrection, VerifiedRemember,
};
use rusqlite::config::DbConfig;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

pub use migrations::SCHEMA_VERSION;
use read_scope::{ReadScope, Readers};
use rows::{evidence_from_row, UuidBytes, EVIDENCE_COLUMNS, EVIDENCE_FROM};

/// The profile `open_team` creates with a team and acts as.
pub const DEFAULT_PROFILE: &str = "default";

/// Converts rusqlite errors at the crate boundary.
/// How long a statement waits for another process's write lock before giving up. A
/// write that gives up is [`StoreError::Busy`] (a server answers 503 with `Retry-After`),
/// never a failure of the store.
pub const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

pub(crate) trait DbResult<T> {
    fn db(self) -> Result<T>;
}

impl<T> DbResult<T> for rusqlite::Result<T> {
    fn db(self) -> Result<T> {
        self.map_err(|err| match err.sqlite_error_code() {
            // Another process held the write lock past the busy timeout: retryable.
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                StoreError::Busy
            }
            _ => StoreError::backend(err),
        })
    }
}

/// Where the store at `path` saves its vector indexes: `<path>-vectors/`, beside the
/// file as SQLite's own `-wal` and `-shm` are. Derived: deleting it costs a rebuild.
pub fn vector_index_dir(path: &Path) -> PathBuf {
    let mut dir = path.as_os_str().to_owned();
    dir.push("-vectors");
    PathBuf::from(dir)
}

/// The vector indexes of a store: over evidence vectors and over discovery vectors, each
/// used for teams with at least `threshold` of them.
#[derive(Clone)]
struct Ann {
    evidence: Arc<ann::AnnIndexes>,
    graph: Arc<ann::AnnIndexes>,
    threshold: usize,
}

/// Read-only connections a file-backed store opens beside its writer: WAL lets them read
/// while it writes, so concurrent recalls (a server's) do not queue behind one lock.
const READERS: usize = 4;

/// A SQLite-backed evidence store. Cheap to clone; clones share one writer connection and
/// a few readers, and every call runs on tokio's blocking pool so an async caller is never
/// stalled by disk I/O (except a recall's short reads after its branches, in
/// [`EvidenceStore::reading_together`]: see `read_scope`).
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    /// Empty for an in-memory store: reads then use the writer.
    readers: Readers,
    clock: Arc<dyn Clock>,
    /// Approximate vector search for teams with at least this many vectors; `None` scans
    /// exactly.
    ann: Option<Ann>,
    /// Where the vector indexes are saved: `<store file>-vectors/` beside the file
    /// (`None` for an in-memory store, whose indexes live and die with it).
    vector_dir: Option<PathBuf>,
    /// MaxScore pruning of common terms in the lexical branch (exact; off only to test
    /// it against scoring every match).
    prune_lexical: bool,
}

/// Turns on SQLite's query planner stability guarantee. Without it a cached statement
/// whose plan could depend on a bound value — `LIMIT ?`, or `state = ?` beside the partial
/// index on `state = 'current'` — is marked expired by every bind and parsed and planned
/// again on its next step: 18% of a recall's CPU in a profile of `mnem serve`. Nothing
/// here binds a value the planner should see (literal conditions stay literal in the SQL).
fn keep_plans_stable(conn: &Connection) -> Result<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .db()?;
    conn.set_prepared_statement_cache_capacity(STATEMENTS_CACHED);
    Ok(())
}

/// Prepared statements a connection keeps. rusqlite keeps 16 by default, fewer than the
/// distinct statements of one ranked recall (branches, eligibility, hydration, windows,
/// mentions, support, discovery): past 16 the least recently used is dropped and parsed
/// again on its next use, every recall.
const STATEMENTS_CACHED: usize = 256;

/// Reads pages through a memory map of the file instead of copying each one out of the
/// operating system's cache into the connection's own (`pread`, then SQLite's page
/// cache): in a profile of `mnem serve` those copies and cache lookups were ~6% of a
/// recall. Only read connections map the file; writes go through the WAL as before.
///
/// The map covers the whole store, however large. A page read through a map stays in the
/// process's working set; a page read with `pread` is only in the kernel's file cache,
/// which a host may reclaim once it has been idle for a while. This machine's kernel does
/// (DAMON `pageout` of unmapped file pages idle for about a minute: a 1.9 GB file read
/// once and left alone lost 0.7 GB of its cached pages within four minutes): on the bench's
/// 3.9 GB 1M store, mapped at 1 GiB, hybrid recall after minutes of other work had a p95
/// of 66–207 ms (the part past the map left to that cache); mapped whole, 7–12 ms. SQLite caps the map at 2 GiB
/// unless built with a larger `SQLITE_MAX_MMAP_SIZE` (this workspace's
/// `.cargo/config.toml` sets it); a build without it maps what it can and says so.
fn read_through_memory_map(conn: &Connection) -> Result<()> {
    let granted: i64 = conn
        .pragma_update_and_check(None, "mmap_size", MAP_BYTES, |row| row.get(0))
        .db()?;
    static TOLD: std::sync::Once = std::sync::Once::new();
    if granted < MAP_BYTES {
        TOLD.call_once(|| {
            tracing::warn!(
                granted,
                "SQLite maps at most {granted} bytes of the store (built without a larger \
             SQLITE_MAX_MMAP_SIZE); pages past that are read through the OS file cache"
            )
        });
    }
    Ok(())
}

/// The read connections' memory map: far past any store (it is address space, mapped
/// only as far as the file reaches).
const MAP_BYTES: i64 = 1 << 40;

impl SqliteStore {
    /// Opens (creating if needed) the store at `path` and brings its schema up to date.
    pub fn open(path: &Path, clock: Arc<dyn Clock>) -> Result<Self> {
        let conn = Connection::open(path).db()?;
        let mut store = Self::from_connection(conn, clock)?;
        let readers = (0..READERS)
            .map(|_| {
                let reader = Connection::open(path).db()?;
                reader.pragma_update(None, "query_only", "ON").db()?;
                read_through_memory_map(&reader)?;
                keep_plans_stable(&reader)?;
                reader.busy_timeout(BUSY_TIMEOUT).db()?;
                Ok(reader)
            })
            .collect::<Result<Vec<_>>>()?;
        store.readers = Readers::new(readers);
        store.vector_dir = Some(vector_index_dir(path));
        Ok(store)
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
        conn.busy_timeout(BUSY_TIMEOUT).db()?;
        keep_plans_stable(&conn)?;
        migrations::migrate(&mut conn)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            readers: Readers::default(),
            clock,
            ann: None,
            vector_dir: None,
            prune_lexical: true,
        })
    }

    /// Documents in the vector indexes this store has open, evidence and discovery (0 when
    /// ANN is off or unused).
    pub fn ann_indexed_documents(&self) -> usize {
        self.ann.as_ref().map_or(0, |ann| {
            ann.evidence.indexed_documents() + ann.graph.indexed_documents()
        })
    }

    /// Vector indexes this store loaded from saved files rather than building them
    /// (diagnostics and tests).
    pub fn ann_indexes_loaded(&self) -> usize {
        self.ann.as_ref().map_or(0, |ann| {
            ann.evidence.loaded_from_disk() + ann.graph.loaded_from_disk()
        })
    }

    /// Opens (loading a saved one, else building), catches up and saves the vector index
    /// of every large team now, evidence and discovery documents, so no client's first
    /// recall waits for one; returns how many. A no-op when ANN is off.
    pub async fn warm_ann(&self) -> Result<usize> {
        let Some(ann) = self.ann.clone() else {
            return Ok(0);
        };
        self.with_reader(move |conn| {
            let evidence = ann.evidence.warm(conn, ann.threshold).db()?;
            let graph = ann.graph.warm(conn, ann.threshold).db()?;
            Ok(evidence + graph)
        })
        .await
    }

    /// Enables the vector index for teams with at least `threshold` current vectors. A
    /// file-backed store saves it in `<store file>-vectors/`, so the next process loads it
    /// and catches up instead of building it.
    pub fn with_ann_threshold(mut self, threshold: usize) -> Self {
        let dir = self.vector_dir.clone();
        self.ann = Some(Ann {
            evidence: Arc::new(ann::AnnIndexes::over("search_documents", dir.clone())),
            graph: Arc::new(ann::AnnIndexes::over("graph_documents", dir)),
            threshold,
        });
        self
    }

    /// How long a write waits for another process's write transaction before it is
    /// answered [`StoreError::Busy`] (default [`BUSY_TIMEOUT`]).
    pub fn with_busy_timeout(self, wait: std::time::Duration) -> Result<Self> {
        self.conn
            .lock()
            .map_err(|_| StoreError::Backend("sqlite writer lock poisoned".into()))?
            .busy_timeout(wait)
            .db()?;
        Ok(self)
    }

    /// Turns the lexical branch's pruning of common terms off: every posting of every
    /// query term is read and scored (the oracle the pruning is tested against).
    pub fn without_lexical_pruning(mut self) -> Self {
        self.prune_lexical = false;
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

    /// Runs read-only `work` in one read transaction ([`in_snapshot`]): inside a
    /// [`EvidenceStore::reading_together`] scope on its connection, right here; otherwise
    /// on a free reader connection (or the writer, in memory) on the blocking pool.
    async fn with_reader<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        if ReadScope::is_open_for(&self.readers) {
            return ReadScope::read(work).await;
        }
        if self.readers.is_empty() {
            return self.with_conn(|conn| in_snapshot(conn, work)).await;
        }
        let readers = self.readers.clone();
        tokio::task::spawn_blocking(move || in_snapshot(&mut readers.take_blocking(), work))
            .await
            .map_err(StoreError::backend)?
    }

    /// Runs `work` in one write transaction (taking the write lock up front, so a
    /// read-then-write never deadlocks with another writer), committed when it succeeds.
    async fn with_tx<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> Result<T> + Send + 'static,
    {
        self.with_conn(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .db()?;
            let out = work(&tx)?;
            tx.commit().db()?;
            Ok(out)
        })
        .await
    }
}

impl EvidenceStore for SqliteStore {
    fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    async fn open_team(&self, name: &str) -> Result<Actor> {
        self.open_profile(name, DEFAULT_PROFILE).await
    }

    async fn remember(&self, actor: &Actor, new: NewEvidence) -> Result<Remembered> {
        let record = new_record(self.clock.as_ref(), actor, new)?;
        self.store_records(actor, vec![record]).await?.only_answer()
    }

    async fn remember_batch(
        &self,
        actor: &Actor,
        items: Vec<NewEvidence>,
    ) -> Result<Vec<Remembered>> {
        let records = batch_records(self.clock.as_ref(), actor, items)?;
        Ok(self.store_records(actor, records).await?.answers)
    }

    async fn record_feedback(&self, actor: &Actor, feedback: RecallFeedback) -> Result<()> {
        let actor = *actor;
        self.with_tx(move |tx| feedback::record(tx, &actor, &feedback))
            .await
    }

    async fn feedback(&self, actor: &Actor, limit: usize) -> Result<Vec<RecallFeedback>> {
        let actor = *actor;
        self.with_reader(move |conn| feedback::list(conn, &actor, limit))
            .await
    }

    async fn usage(&self, actor: &Actor, id: EvidenceId) -> Result<Usage> {
        let actor = *actor;
        self.with_reader(move |conn| {
            visible_evidence(conn, &actor, id)?;
            feedback::usage(conn, &actor, id)
        })
        .await
    }

    async fn writes(&self, actor: &Actor, id: EvidenceId) -> Result<Vec<Provenance>> {
        let actor = *actor;
        self.with_reader(move |conn| {
            visible_evidence(conn, &actor, id)?;
            dedup::writes(conn, &actor, id)
        })
        .await
    }

    async fn get(&self, actor: &Actor, id: EvidenceId) -> Result<Evidence> {
        let actor = *actor;
        self.with_reader(move |conn| visible_evidence(conn, &actor, id))
            .await
    }

    async fn newest_revision(&self, actor: &Actor, source_key: &str) -> Result<Option<i64>> {
        let (actor, source_key) = (*actor, source_key.to_string());
        self.with_reader(move |conn| {
            conn.query_row(
                "SELECT max(source_revision) FROM evidence WHERE team_id = ?1 \
                 AND source_key = ?2 AND state <> 'erased' \
                 AND (space = 'team' OR owner_profile_id = ?3)",
                params![actor.team.as_bytes(), source_key, actor.profile.as_bytes()],
                |row| row.get(0),
            )
            .db()
        })
        .await
    }

    async fn history(&self, actor: &Actor, id: EvidenceId) -> Result<Vec<LifecycleEvent>> {
        let actor = *actor;
        self.with_reader(move |conn| {
            visible_evidence(conn, &actor, id)?;
            pack::evidence_events(conn, &actor, id)
        })
        .await
    }

    async fn retract(&self, actor: &Actor, id: EvidenceId, reason: Option<String>) -> Result<()> {
        self.retract_evidence(actor, vec![id], reason).await?;
        Ok(())
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
        let prune = self.prune_lexical;
        self.with_reader(move |conn| {
            recall_branches::lexical(conn, &actor, &query, now, pool, prune).db()
        })
        .await
    }

    async fn neighbours(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        now: Timestamp,
        hits: Vec<Evidence>,
        window: usize,
    ) -> Result<HashMap<EvidenceId, Neighbours>> {
        let actor = *actor;
        let query = query.clone();
        self.with_reader(move |conn| {
            recall_branches::neighbours(conn, &actor, &query, now, &hits, window).db()
        })
        .await
    }

    async fn scopes(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<Scope>> {
        let (actor, query) = (*actor, query.clone());
        let paths = self
            .with_reader(move |conn| recall_branches::scopes(conn, &actor, &query, now, limit).db())
            .await?;
        paths
            .iter()
            .map(|path| Scope::parse(path).map_err(StoreError::backend))
            .collect()
    }

    async fn texts_in_period(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        cap: usize,
    ) -> Result<Option<usize>> {
        let (actor, query) = (*actor, query.clone());
        self.with_reader(move |conn| {
            recall_branches::texts_in_period(conn, &actor, &query, cap).db()
        })
        .await
    }

    async fn mentioned(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        now: Timestamp,
        keys: Vec<String>,
        max_items: usize,
        known: HashSet<EvidenceId>,
    ) -> Result<MentionRead> {
        let actor = *actor;
        let query = query.clone();
        self.with_reader(move |conn| {
            mentions::mentioned(conn, &actor, &query, now, &keys, max_items, &known).db()
        })
        .await
    }

    async fn reading_together<F>(&self, _actor: &Actor, reads: F) -> F::Output
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        ReadScope::reading_together(&self.readers, reads).await
    }
}

impl GraphStore for SqliteStore {
    async fn open_profile(&self, team: &str, profile: &str) -> Result<Actor> {
        let team = validate_team_name(team)?.to_string();
        let profile = validate_profile_name(profile)?.to_string();
        let now = self.clock.now();
        self.with_tx(move |tx| ensure_profile(tx, &team, &profile, now))
            .await
    }

    async fn profile_names(
        &self,
        actor: &Actor,
        ids: Vec<ProfileId>,
    ) -> Result<Vec<(ProfileId, String)>> {
        let team = actor.team;
        self.with_reader(move |conn| {
            let listed = graph::hex_ids(ids.iter().map(ProfileId::as_bytes));
            let sql = mnem_sql::select_profile_names(
                "?1",
                "{id} IN (SELECT unhex(value) FROM json_each(?2))",
            );
            let mut stmt = conn.prepare_cached(&sql).db()?;
            let rows = stmt
                .query_map(params![team.as_bytes(), listed], |row| {
                    Ok((row.get::<_, rows::UuidBytes>(0)?, row.get::<_, String>(1)?))
                })
                .db()?;
            rows.map(|row| {
                let (id, name) = row.db()?;
                Ok((ProfileId::from_bytes(id.0), name))
            })
            .collect()
        })
        .await
    }

    async fn replayed(
        &self,
        actor: &Actor,
        key: &str,
        request_hash: &str,
    ) -> Result<Option<RememberOutcome>> {
        let (actor, key, hash) = (*actor, key.to_string(), request_hash.to_string());
        self.with_conn(move |conn| {
            let rows = SqliteRows { conn };
            graph::run(graph_write::replayed(&rows, &actor, &key, &hash))
        })
        .await
    }

    async fn commit_remember(
        &self,
        actor: &Actor,
        request: VerifiedRemember,
    ) -> Result<RememberOutcome> {
        let actor = *actor;
        let now = self.clock.now();
        self.with_tx(move |tx| {
            let rows = SqliteRows { conn: tx };
            graph::run(graph_write::commit_remember(&rows, &actor, request, now))
        })
        .await
    }

    async fn retract_evidence(
        &self,
        actor: &Actor,
        ids: Vec<EvidenceId>,
        reason: Option<String>,
    ) -> Result<Vec<EvidenceId>> {
        let actor = *actor;
        let at = self.clock.now();
        self.with_tx(move |tx| {
            let rows = SqliteRows { conn: tx };
            graph::run(graph_write::retract_evidence(
                &rows,
                &actor,
                &ids,
                reason.as_deref(),
                at,
            ))
        })
        .await
    }

    async fn quarantine_evidence(
        &self,
        actor: &Actor,
        ids: Vec<EvidenceId>,
        reason: String,
    ) -> Result<()> {
        self.move_evidence(actor, ids, LifecycleState::Quarantined, Some(reason))
            .await
    }

    async fn release_evidence(
        &self,
        actor: &Actor,
        ids: Vec<EvidenceId>,
        reason: String,
    ) -> Result<()> {
        let actor = *actor;
        let at = self.clock.now();
        self.with_tx(move |tx| {
            let rows = SqliteRows { conn: tx };
            graph::run(graph_write::release_evidence(
                &rows, &actor, &ids, &reason, at,
            ))
        })
        .await
    }

    async fn quarantined(&self, actor: &Actor, limit: usize) -> Result<Vec<EvidenceId>> {
        let actor = *actor;
        self.with_reader(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT evidence_id FROM evidence \
                     WHERE team_id = ?1 AND state = 'quarantined' \
                     AND (space = 'team' OR owner_profile_id = ?2) \
                     ORDER BY recorded_at DESC, evidence_id DESC LIMIT ?3",
                )
                .db()?;
            let ids = stmt
                .query_map(
                    params![
                        actor.team.as_bytes(),
                        actor.profile.as_bytes(),
                        limit as i64
                    ],
                    |row| row.get::<_, UuidBytes>(0),
                )
                .db()?
                .map(|id| Ok(EvidenceId::from_bytes(id.db()?.0)))
                .collect::<Result<Vec<_>>>()?;
            Ok(ids)
        })
        .await
    }

    async fn forget(&self, actor: &Actor, ids: Vec<EvidenceId>) -> Result<()> {
        let actor = *actor;
        let at = self.clock.now();
        self.with_tx(move |tx| {
            let rows = SqliteRows { conn: tx };
            graph::run(graph_write::forget(&rows, &actor, &ids, at))
        })
        .await
    }

    async fn relationship(&self, actor: &Actor, id: RelationshipId) -> Result<Relationship> {
        let actor = *actor;
        self.with_reader(move |conn| {
            graph::relationships::relationship(conn, &actor, id, &GraphView::default())
        })
        .await
    }

    async fn commit_correction(
        &self,
        actor: &Actor,
        correction: VerifiedCorrection,
    ) -> Result<RelationshipOutcome> {
        let actor = *actor;
        let now = self.clock.now();
        self.with_tx(move |tx| {
            let rows = SqliteRows { conn: tx };
            graph::run(graph_write::commit_correction(
                &rows, &actor, correction, now,
            ))
        })
        .await
    }

    async fn export_pack(
        &self,
        actor: &Actor,
        selection: PackSelection,
        max_bytes: Option<usize>,
    ) -> Result<Pack> {
        let actor = *actor;
        let exported_at = self.clock.now();
        // `with_reader`'s one read transaction makes the pack one snapshot of the file.
        self.with_reader(move |conn| {
            let rows = SqliteRows { conn };
            graph::run(mnem_store::pack::export(
                &rows,
                &actor,
                selection,
                exported_at,
                max_bytes,
            ))
        })
        .await
    }

    async fn import_pack(&self, actor: &Actor, pack: Pack, mode: ImportMode) -> Result<PackImport> {
        let actor = *actor;
        let now = self.clock.now();
        self.with_tx(move |tx| {
            let rows = SqliteRows { conn: tx };
            graph::run(mnem_store::pack::import(&rows, &actor, &pack, mode, now))
        })
        .await
    }

    async fn trace(&self, actor: &Actor, id: RelationshipId, view: GraphView) -> Result<Trace> {
        let actor = *actor;
        self.with_reader(move |conn| {
            let rows = SqliteRows { conn };
            graph::run(trace_read::trace(&rows, &actor, id, &view))
        })
        .await
    }

    async fn entities_named(
        &self,
        actor: &Actor,
        names: Vec<String>,
    ) -> Result<Vec<(EntityId, String)>> {
        let actor = *actor;
        self.with_reader(move |conn| graph::discovery::entities_named(conn, &actor, &names))
            .await
    }

    async fn adjacency(
        &self,
        actor: &Actor,
        entities: Vec<EntityId>,
        view: GraphView,
        fanout: usize,
    ) -> Result<Vec<Adjacency>> {
        let actor = *actor;
        self.with_reader(move |conn| {
            graph::discovery::adjacency(conn, &actor, &entities, &view, fanout)
        })
        .await
    }

    async fn graph_vector_seeds(
        &self,
        actor: &Actor,
        vector: &[f32],
        contract: &EmbeddingContract,
        view: GraphView,
        min_similarity: f64,
        limit: usize,
    ) -> Result<Vec<(EntityId, f64)>> {
        let actor = *actor;
        let vector = vector.to_vec();
        let key = contract.key();
        let ann = self.ann.clone();
        self.with_reader(move |conn| {
            let ann = ann.as_ref().map(|ann| (ann.graph.as_ref(), ann.threshold));
            let search = graph::discovery::SeedSearch {
                vector: &vector,
                contract_key: &key,
                min_similarity,
                limit,
            };
            graph::discovery::graph_vector_seeds(conn, &actor, &search, &view, ann)
        })
        .await
    }

    async fn evidence_support(
        &self,
        actor: &Actor,
        evidence: Vec<EvidenceId>,
        view: GraphView,
    ) -> Result<HashMap<EvidenceId, Support>> {
        let actor = *actor;
        self.with_reader(move |conn| {
            graph::discovery::evidence_support(conn, &actor, &evidence, &view)
        })
        .await
    }

    async fn edges_supported_by(
        &self,
        actor: &Actor,
        evidence: Vec<EvidenceId>,
        view: GraphView,
        limit: usize,
    ) -> Result<Vec<GraphEdge>> {
        let actor = *actor;
        self.with_reader(move |conn| {
            graph::discovery::edges_supported_by(conn, &actor, &evidence, &view, limit)
        })
        .await
    }

    async fn dream_inputs(&self, actor: &Actor, limit: usize) -> Result<Vec<Relationship>> {
        let actor = *actor;
        self.with_reader(move |conn| hypotheses::dream_inputs(conn, &actor, limit))
            .await
    }

    async fn record_hypotheses(
        &self,
        actor: &Actor,
        proposed: Vec<ProposedHypothesis>,
    ) -> Result<HypothesisPass> {
        let actor = *actor;
        let now = self.clock.now();
        self.with_tx(move |tx| hypotheses::record(tx, &actor, &proposed, now))
            .await
    }

    async fn hypotheses(&self, actor: &Actor, filter: HypothesisFilter) -> Result<Vec<Hypothesis>> {
        let actor = *actor;
        self.with_reader(move |conn| hypotheses::list(conn, &actor, &filter))
            .await
    }

    async fn resolve_hypothesis(
        &self,
        actor: &Actor,
        id: HypothesisId,
        resolution: HypothesisResolution,
    ) -> Result<Hypothesis> {
        let actor = *actor;
        self.with_tx(move |tx| hypotheses::resolve(tx, &actor, id, &resolution))
            .await
    }

    async fn record_model_reading(
        &self,
        actor: &Actor,
        id: HypothesisId,
        reading: ModelReading,
    ) -> Result<bool> {
        let actor = *actor;
        self.with_tx(move |tx| hypotheses::record_model_reading(tx, &actor, id, &reading))
            .await
    }

    async fn record_communities(
        &self,
        actor: &Actor,
        found: Vec<DetectedCommunity>,
        fingerprint: String,
        relationships: usize,
    ) -> Result<CommunityPass> {
        let actor = *actor;
        let now = self.clock.now();
        self.with_tx(move |tx| {
            communities::record(tx, &actor, &found, &fingerprint, relationships, now)
        })
        .await
    }

    async fn communities(&self, actor: &Actor, filter: CommunityFilter) -> Result<Vec<Community>> {
        let actor = *actor;
        self.with_reader(move |conn| communities::list(conn, &actor, &filter))
            .await
    }
}

impl SqliteStore {
    /// Validated records settled against the team's stored texts
    /// ([`mnem_store::dedup`]) and written in one transaction: the fresh ones inserted,
    /// the repeated ones recorded as writes of the items they repeat.
    async fn store_records(&self, actor: &Actor, records: Vec<NewRecord>) -> Result<Settled> {
        let actor = *actor;
        let now = self.clock.now();
        self.with_tx(move |tx| {
            let rows = SqliteRows { conn: tx };
            let mut settled = graph::run(mnem_store::dedup::settle(&rows, &actor, records, now))?;
            let older = graph::run(graph_write::place_revisions(&rows, &actor, &mut settled))?;
            for (evidence, hold) in &settled.fresh {
                insert_evidence(tx, evidence, hold.as_deref())?;
            }
            graph::run(settled.record(&rows, &actor))?;
            graph::run(graph_write::supersede_older_revisions(
                &rows, &actor, &older, now,
            ))?;
            Ok(settled)
        })
        .await
    }

    async fn move_evidence(
        &self,
        actor: &Actor,
        ids: Vec<EvidenceId>,
        state: LifecycleState,
        reason: Option<String>,
    ) -> Result<()> {
        let actor = *actor;
        let at = self.clock.now();
        self.with_tx(move |tx| {
            let rows = SqliteRows { conn: tx };
            let reason = reason.as_deref();
            graph::run(graph_write::move_evidence(
                &rows, &actor, &ids, state, reason, at,
            ))
        })
        .await
    }
}

impl SearchIndex for SqliteStore {
    async fn recorded_contract(&self) -> Result<Option<EmbeddingContract>> {
        self.with_reader(|conn| embedding_queue::recorded_contract(conn))
            .await
    }

    async fn activate_contract(&self, contract: &EmbeddingContract) -> Result<()> {
        let contract = contract.clone();
        self.with_tx(move |tx| embedding_queue::activate_contract(tx, &contract))
            .await
    }

    async fn reindex(&self, contract: &EmbeddingContract) -> Result<u64> {
        let contract = contract.clone();
        let now = self.clock.now();
        self.with_tx(move |tx| embedding_queue::reindex(tx, &contract, now))
            .await
    }

    async fn pending_documents(&self, limit: usize) -> Result<Vec<PendingDocument>> {
        self.with_conn(move |conn| embedding_queue::pending_documents(conn, limit))
            .await
    }

    async fn team_pending_documents(
        &self,
        team: TeamId,
        limit: usize,
    ) -> Result<Vec<PendingDocument>> {
        self.with_conn(move |conn| embedding_queue::team_pending_documents(conn, team, limit))
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
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .db()?;
            embedding_queue::store_vectors(&tx, &contract, &vectors, now)?;
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
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .db()?;
            embedding_queue::record_failures(&tx, &failures, max_attempts, now)?;
            tx.commit().db()
        })
        .await
    }

    async fn freshness(&self, now: Timestamp) -> Result<SearchFreshness> {
        self.with_reader(move |conn| embedding_queue::freshness(conn, now))
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
        self.with_reader(move |conn| {
            let ann = ann
                .as_ref()
                .map(|ann| (ann.evidence.as_ref(), ann.threshold));
            recall_branches::vector(conn, &actor, &query, &vector, &key, now, pool, ann).db()
        })
        .await
    }

    async fn record_degradation(&self, degradation: Degradation) -> Result<()> {
        self.with_conn(move |conn| embedding_queue::record_degradation(conn, &degradation))
            .await
    }

    async fn last_degradation(&self) -> Result<Option<Degradation>> {
        self.with_reader(|conn| embedding_queue::last_degradation(conn))
            .await
    }
}

/// Runs read-only `work` inside one read transaction. Every statement then sees the same
/// snapshot of the file — a lexical search's block, statistics and eligibility reads
/// agree even while a writer commits between them — and the WAL read lock is taken once
/// instead of once per statement (each took and released it through `fcntl`: 5% of a
/// lexical recall's time in a profile at 100k items).
fn in_snapshot<T>(
    conn: &mut Connection,
    work: impl FnOnce(&mut Connection) -> Result<T>,
) -> Result<T> {
    if !conn.is_autocommit() {
        // Already inside a transaction (never on a reader): it is the snapshot.
        return work(conn);
    }
    // Cached statements: `execute_batch` would parse them again on every read.
    conn.prepare_cached("BEGIN").db()?.execute([]).db()?;
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&mut *conn)));
    // Nothing was written: ending the transaction either way only releases the snapshot.
    // Also after a panic, so a connection left behind never pins the WAL to an old read.
    let end = if matches!(out, Ok(Ok(_))) {
        "COMMIT"
    } else {
        "ROLLBACK"
    };
    let ended = conn
        .prepare_cached(end)
        .and_then(|mut statement| statement.execute([]));
    let out = out.unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
    ended.db()?;
    Ok(out)
}

/// Resolves (creating on first use) a team and one of its profiles by name.
pub(crate) fn ensure_profile(
    tx: &rusqlite::Transaction<'_>,
    team: &str,
    profile: &str,
    now: Timestamp,
) -> Result<Actor> {
    let team_id = match tx
        .query_row(
            "SELECT team_id FROM teams WHERE name = ?1",
            params![team],
            |row| row.get::<_, UuidBytes>(0),
        )
        .optional()
        .db()?
    {
        Some(id) => TeamId::from_bytes(id.0),
        None => {
            let id = TeamId(new_uuid_v7(now));
            tx.execute(
                "INSERT INTO teams (team_id, name, created_at) VALUES (?1, ?2, ?3)",
                params![id.as_bytes(), team, now.as_micros()],
            )
            .db()?;
            id
        }
    };
    let profile_id = match tx
        .query_row(
            "SELECT profile_id FROM profiles WHERE team_id = ?1 AND name = ?2",
            params![team_id.as_bytes(), profile],
            |row| row.get::<_, UuidBytes>(0),
        )
        .optional()
        .db()?
    {
        Some(id) => ProfileId::from_bytes(id.0),
        None => {
            let id = ProfileId(new_uuid_v7(now));
            tx.execute(
                "INSERT INTO profiles (team_id, profile_id, name, created_at) \
                 VALUES (?1, ?2, ?3, ?4)",
                params![team_id.as_bytes(), id.as_bytes(), profile, now.as_micros()],
            )
            .db()?;
            id
        }
    };
    Ok(Actor {
        team: team_id,
        profile: profile_id,
    })
}

/// Inserts a new record with its first lifecycle event; `reason` explains a state other
/// than `current` (a screening hold, a superseded late revision).
pub(crate) fn insert_evidence(tx: &Connection, e: &Evidence, reason: Option<&str>) -> Result<()> {
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
    lexical::index(tx, e.team, doc, &e.content).db()?;
    mentions::index(tx, e.team, doc, &e.content).db()?;
    embedding_queue::enqueue(tx, doc, e.team, e.recorded_at)?;
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
    append_event(tx, &actor, e.id, e.state, e.recorded_at, reason)
}

pub(crate) fn append_event(
    tx: &Connection,
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
pub(crate) fn visible_evidence(
    conn: &Connection,
    actor: &Actor,
    id: EvidenceId,
) -> Result<Evidence> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    /// How often SQLite planned the cached statement again over three runs with new binds.
    fn replans(stable: bool) -> i32 {
        let conn = Connection::open_in_memory().unwrap();
        if stable {
            keep_plans_stable(&conn).unwrap();
        }
        conn.execute_batch(
            "CREATE TABLE t (x INTEGER, s TEXT);
             CREATE INDEX t_current ON t (x) WHERE s = 'current';",
        )
        .unwrap();
        let sql = "SELECT x FROM t WHERE s = ? ORDER BY x LIMIT ?";
        for limit in 1..=3 {
            let mut stmt = conn.prepare_cached(sql).unwrap();
            let rows = stmt.query_map(params!["current", limit], |row| row.get::<_, i64>(0));
            assert_eq!(rows.unwrap().count(), 0);
        }
        let stmt = conn.prepare_cached(sql).unwrap();
        stmt.get_status(StatementStatus::RePrepare)
    }

    #[test]
    fn a_cached_statement_is_not_planned_again_for_each_bind() {
        assert_eq!(replans(true), 0);
    }

    #[test]
    fn without_the_guarantee_sqlite_plans_again_for_each_bind() {
        assert!(replans(false) > 0);
    }

    /// The map a read connection gets is the one asked for, past SQLite's default cap
    /// of 2 GiB: fails when the bundled SQLite is built without the workspace's
    /// `SQLITE_MAX_MMAP_SIZE` (`.cargo/config.toml`).
    #[test]
    fn a_read_connection_maps_a_store_larger_than_two_gib() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("mapped.db")).unwrap();
        read_through_memory_map(&conn).unwrap();
        let mapped: i64 = conn
            .pragma_query_value(None, "mmap_size", |row| row.get(0))
            .unwrap();
        assert_eq!(mapped, MAP_BYTES);
        assert!(mapped > 0x7fff_0000);
    }

    /// Two connections to one WAL file: a reader, and a writer that commits a row.
    fn wal_pair(dir: &std::path::Path) -> (Connection, Connection) {
        let path = dir.join("snapshot.db");
        let writer = Connection::open(&path).unwrap();
        writer
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))
            .unwrap();
        writer.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
        (Connection::open(&path).unwrap(), writer)
    }

    fn rows(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM t", [], |row| row.get(0))
            .unwrap()
    }

    #[test]
    fn a_readers_statements_share_one_snapshot_while_a_writer_commits() {
        let dir = tempfile::tempdir().unwrap();
        let (mut reader, writer) = wal_pair(dir.path());
        let (before, during) = in_snapshot(&mut reader, |conn| {
            let before = rows(conn);
            writer.execute("INSERT INTO t VALUES (1)", []).unwrap();
            Ok((before, rows(conn)))
        })
        .unwrap();
        assert_eq!(before, 0);
        assert_eq!(during, 0);
        // The next read sees the commit: the snapshot ended with the work.
        assert_eq!(rows(&reader), 1);
        assert!(reader.is_autocommit());
    }

    #[test]
    fn a_snapshot_ends_when_its_work_fails_or_panics() {
        let dir = tempfile::tempdir().unwrap();
        let (mut reader, writer) = wal_pair(dir.path());
        let failed: Result<()> = in_snapshot(&mut reader, |conn| {
            rows(conn);
            Err(StoreError::Backend("the work failed".into()))
        });
        assert!(
            matches!(&failed, Err(StoreError::Backend(reason)) if reason.to_string() == "the work failed")
        );
        assert!(reader.is_autocommit());
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            in_snapshot(&mut reader, |conn| -> Result<()> {
                rows(conn);
                panic!("the work panicked")
            })
        }));
        assert!(panicked.is_err());
        assert!(reader.is_autocommit());
        writer.execute("INSERT INTO t VALUES (1)", []).unwrap();
        assert_eq!(rows(&reader), 1);
    }
}
