//! The server backend: PostgreSQL with pgvector. Many stateless `mnem serve` processes
//! share one database; it persists evidence and produces recall candidates with every
//! eligibility rule inside its SQL, and ranks nothing (`mnem-core` does).
//!
//! Architecture invariants: every statement filters on `team_id`, and every transaction
//! that touches a tenant table first names its team (`mnem.team_id`, transaction-local),
//! so row-level security holds even where a statement forgot its filter. Pooled
//! connections act as `mnem_app`, a role that owns nothing and cannot bypass the
//! policies. No user text is ever spliced into SQL or read as query syntax.

mod communities;
mod credentials;
mod dedup;
pub mod distribution;
mod embedding_queue;
mod feedback;
mod graph;
mod hypotheses;
mod lexical;
mod mentions;
mod migrations;
mod pack;
mod prepared;
mod read_scope;
mod recall_branches;
mod rows;
pub mod testing;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use deadpool_postgres::{Hook, HookError, Manager, ManagerConfig, Pool, RecyclingMethod};
use graph::PgRows;
use mnem_core::dedup::Provenance;
use mnem_core::feedback::{RecallFeedback, Usage};
use mnem_core::graph::{
    Adjacency, Community, DetectedCommunity, GraphEdge, Hypothesis, ModelReading,
    ProposedHypothesis, Relationship, RelationshipOutcome, RememberOutcome, Trace,
};
use mnem_core::hop::MentionRead;
use mnem_core::lexical::DocumentTerms;
use mnem_core::pack::{Pack, PackSelection};
use mnem_core::signals::Support;
use mnem_core::{
    Actor, Candidate, Clock, EmbeddingContract, EntityId, Evidence, EvidenceId, HypothesisId,
    LifecycleEvent, LifecycleState, Neighbours, NewEvidence, ProfileId, RecallQuery,
    RelationshipId, TeamId, Timestamp,
};
use mnem_store::dedup::{NewRecord, Settled};
use mnem_store::{batch_records, graph_write, new_record, trace_read, Remembered};
use mnem_store::{
    new_uuid_v7, validate_profile_name, validate_team_name, CommunityFilter, CommunityPass,
    Degradation, EvidenceStore, GraphStore, GraphView, HypothesisFilter, HypothesisPass,
    HypothesisResolution, ImportMode, PackImport, PendingDocument, Result, SearchFreshness,
    SearchIndex, StoreError, VerifiedCorrection, VerifiedRemember,
};
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Transaction};
use uuid::Uuid;

pub use migrations::SCHEMA_VERSION;
use rows::{col, evidence_from_row, EVIDENCE_COLUMNS};

/// The profile `open_team` creates with a team and acts as.
pub const DEFAULT_PROFILE: &str = "default";

/// The role pooled connections act as: subject to every row-level policy.
pub const APP_ROLE: &str = "mnem_app";

/// Connections per server process unless configured.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// Converts tokio-postgres errors at the crate boundary.
pub(crate) trait DbResult<T> {
    fn db(self) -> Result<T>;
}

impl<T> DbResult<T> for std::result::Result<T, tokio_postgres::Error> {
    fn db(self) -> Result<T> {
        self.map_err(StoreError::backend)
    }
}

/// A statement parameter whose type is decided at run time.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

pub(crate) fn param_refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| p.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

/// How a [`PgStore`] searches vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorSearch {
    /// pgvector's HNSW index with iterative scans (the default).
    Approximate,
    /// Every eligible vector compared: the oracle the index is measured against.
    Exact,
}

/// A PostgreSQL-backed store. Cheap to clone; clones share one connection pool.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    /// The login role's settings: schema changes (migrations, vector indexes) run as it,
    /// never as the application role.
    owner: tokio_postgres::Config,
    clock: Arc<dyn Clock>,
    vector_search: VectorSearch,
    /// Teams with fewer texts are compared exactly ([`recall_branches::VectorPlan`]).
    ann_threshold: usize,
    /// MaxScore pruning of common terms in the lexical branch (exact; off only to test
    /// that it is).
    prune_lexical: bool,
}

impl PgStore {
    /// Connects to `url`, brings the schema up to date (serialised across processes by an
    /// advisory lock) and opens a pool of at most `pool_size` connections.
    pub async fn connect(url: &str, clock: Arc<dyn Clock>, pool_size: usize) -> Result<Self> {
        let config: tokio_postgres::Config = url.parse().map_err(StoreError::backend)?;
        Self::connect_config(config, clock, pool_size).await
    }

    /// [`PgStore::connect`] with parsed settings.
    pub async fn connect_config(
        config: tokio_postgres::Config,
        clock: Arc<dyn Clock>,
        pool_size: usize,
    ) -> Result<Self> {
        migrations::migrate(&config).await?;
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pool_size.max(1))
            .post_create(Hook::async_fn(|client, _| {
                Box::pin(async move {
                    client
                        .batch_execute(&format!("SET ROLE {APP_ROLE}"))
                        .await
                        .map_err(HookError::Backend)
                })
            }))
            .build()
            .map_err(StoreError::backend)?;
        Ok(Self {
            pool,
            owner: config,
            clock,
            vector_search: VectorSearch::Approximate,
            ann_threshold: 0,
            prune_lexical: true,
        })
    }

    /// Turns the lexical branch's pruning of common terms off: every match is scored
    /// (the oracle the pruning is tested against).
    pub fn without_lexical_pruning(mut self) -> Self {
        self.prune_lexical = false;
        self
    }

    /// Selects how vectors are searched (the exact scan is the index's oracle).
    pub fn with_vector_search(mut self, search: VectorSearch) -> Self {
        self.vector_search = search;
        self
    }

    /// Searches a team's vectors through the HNSW index only once it has at least
    /// `threshold` texts; smaller teams are compared exactly (as SQLite's
    /// `with_ann_threshold`). Without it, every team's search walks the index.
    pub fn with_ann_threshold(mut self, threshold: usize) -> Self {
        self.ann_threshold = threshold;
        self
    }

    fn vector_plan(&self) -> recall_branches::VectorPlan {
        recall_branches::VectorPlan {
            exact: self.vector_search == VectorSearch::Exact,
            ann_threshold: self.ann_threshold,
        }
    }

    /// Refreshes the planner's statistics, as an operator does after a bulk import:
    /// until autovacuum gets to a freshly loaded table, the planner may think it empty
    /// and scan where the HNSW index would answer.
    pub async fn analyze(&self) -> Result<()> {
        migrations::analyze(&self.owner).await
    }

    /// Before a bulk load of vectors (an import, a re-embedding, a benchmark): drops the
    /// HNSW indexes of vectors `dims` wide, which pgvector would otherwise extend one row
    /// at a time. Recall stays correct meanwhile (the vector branch scans). Every server
    /// sharing the database is affected: an operator's step, never done on its own.
    pub async fn drop_vector_indexes(&self, dims: usize) -> Result<()> {
        migrations::drop_vector_indexes(&self.owner, dims).await
    }

    /// After a bulk load: builds the HNSW indexes of vectors `dims` wide from the loaded
    /// rows, in `maintenance_memory` (a PostgreSQL size such as `2GB`; the build slows
    /// sharply once the graph outgrows it).
    pub async fn build_vector_indexes(&self, dims: usize, maintenance_memory: &str) -> Result<()> {
        migrations::build_vector_indexes(&self.owner, dims, maintenance_memory).await
    }

    /// The database's size on disk, every team's rows and indexes included.
    pub async fn database_bytes(&self) -> Result<u64> {
        let client = self.client().await?;
        let row = as_client(&client)
            .query_one("SELECT pg_database_size(current_database())", &[])
            .await
            .db()?;
        Ok(rows::col::<i64>(&row, 0)?.max(0) as u64)
    }

    /// The vector branch's plan for this query (`EXPLAIN (ANALYZE, BUFFERS)`): what the
    /// database does for one recall's nearest-neighbour search.
    pub async fn explain_vector_candidates(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        vector: &[f32],
        contract: &EmbeddingContract,
        pool: usize,
    ) -> Result<String> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        let now = self.clock.now();
        let plan = self.vector_plan();
        recall_branches::explain_vector(&tx, actor, query, vector, contract, now, pool, plan).await
    }

    /// A pooled connection, acting as [`APP_ROLE`].
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool.get().await.map_err(StoreError::backend)
    }
}

/// The pooled connection as a plain client, for statements outside a transaction.
pub(crate) fn as_client(object: &deadpool_postgres::Object) -> &tokio_postgres::Client {
    object
}

/// Starts a transaction on `client` scoped to `team` (row-level security admits only its
/// rows), read-only when asked. A read-only one is `REPEATABLE READ`: all its statements
/// see one snapshot — a lexical search's block, statistics and eligibility steps agree
/// even while another server commits between them — and a read-only transaction never
/// fails to serialise. Writes keep `READ COMMITTED` under the team's locks.
pub(crate) async fn begin<'c>(
    client: &'c mut deadpool_postgres::Object,
    team: Option<TeamId>,
    read_only: bool,
) -> Result<deadpool_postgres::Transaction<'c>> {
    let tx = start(client, read_only).await?;
    if let Some(team) = team {
        set_team(&tx, team).await?;
    }
    Ok(tx)
}

/// Names a transaction's team for the row-level policies.
pub(crate) const SET_TEAM: &str = "SELECT set_config('mnem.team_id', $1, true)";

/// A transaction with [`begin`]'s isolation: `REPEATABLE READ` when read-only.
async fn start(
    client: &mut deadpool_postgres::Object,
    read_only: bool,
) -> Result<deadpool_postgres::Transaction<'_>> {
    let mut builder = client.build_transaction().read_only(read_only);
    if read_only {
        builder = builder.isolation_level(tokio_postgres::IsolationLevel::RepeatableRead);
    }
    builder.start().await.db()
}

/// [`SET_TEAM`], and generic plans for the rest of the transaction: for reads made only of
/// lookups by key, whose best plan does not hang on the values (no limit an index walk is
/// chosen for). The lexical search steps through such lookups, and PostgreSQL, left to
/// choose, planned two of them afresh on every call (the term statistics and the block
/// reads, ~0.3 ms a search, more than they ran). Sent with the transaction's `START`, it
/// costs no round trip ([`read_scope::ReadScope::lookups`]).
pub(crate) const SET_TEAM_FOR_LOOKUPS: &str = "SELECT set_config('mnem.team_id', $1, true), \
     set_config('plan_cache_mode', 'force_generic_plan', true)";

/// Names the transaction's team for the row-level policies. Every recall, write and
/// authenticated request does, often several times: a statement the connection prepared
/// once saves the parse round trip (and the close) a bare text costs each time.
pub(crate) async fn set_team(tx: &impl prepared::Session, team: TeamId) -> Result<()> {
    prepared::execute(tx, SET_TEAM, &[&team.0.to_string()]).await?;
    Ok(())
}

/// Runs `$read` (an expression using `$session`) on the recall's shared read
/// ([`read_scope`]) when the task has one for `$team`, else in a read-only transaction of
/// its own, as every read did before.
macro_rules! scoped_read {
    ($store:expr, $team:expr, |$session:ident| $read:expr) => {{
        if let Some(scope) = read_scope::ReadScope::current($team) {
            let $session = scope.client()?;
            $read.await
        } else {
            let mut client = $store.client().await?;
            let tx = begin(&mut client, Some($team), true).await?;
            let $session = &tx;
            $read.await
        }
    }};
}

/// Serialises the semantic layer's writes within one team (entity resolution, conflicts,
/// log sequence numbers read-then-write), as SQLite's single writer does; other teams
/// and plain evidence writes proceed in parallel.
pub(crate) async fn lock_team_graph(tx: &Transaction<'_>, team: TeamId) -> Result<()> {
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 7))",
        &[&team.0.to_string()],
    )
    .await
    .db()?;
    Ok(())
}

impl EvidenceStore for PgStore {
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
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), false).await?;
        feedback::record(&tx, actor, &feedback).await?;
        tx.commit().await.db()
    }

    async fn feedback(&self, actor: &Actor, limit: usize) -> Result<Vec<RecallFeedback>> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        feedback::list(&tx, actor, limit).await
    }

    async fn usage(&self, actor: &Actor, id: EvidenceId) -> Result<Usage> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        visible_evidence(&tx, actor, id).await?;
        feedback::usage(&tx, actor, id).await
    }

    async fn writes(&self, actor: &Actor, id: EvidenceId) -> Result<Vec<Provenance>> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        visible_evidence(&tx, actor, id).await?;
        dedup::writes(&tx, actor, id).await
    }

    async fn get(&self, actor: &Actor, id: EvidenceId) -> Result<Evidence> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        visible_evidence(&tx, actor, id).await
    }

    async fn newest_revision(&self, actor: &Actor, source_key: &str) -> Result<Option<i64>> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        let row = tx
            .query_one(
                "SELECT max(source_revision) FROM evidence WHERE team_id = $1 \
                 AND source_key = $2 AND state <> 'erased' \
                 AND (space = 'team' OR owner_profile_id = $3)",
                &[&actor.team.0, &source_key, &actor.profile.0],
            )
            .await
            .db()?;
        row.try_get(0).db()
    }

    async fn history(&self, actor: &Actor, id: EvidenceId) -> Result<Vec<LifecycleEvent>> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        visible_evidence(&tx, actor, id).await?;
        pack::evidence_events(&tx, actor, id).await
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
        if query.is_listing() {
            let mut client = self.client().await?;
            let tx = begin(&mut client, Some(actor.team), true).await?;
            return recall_branches::listing(&tx, actor, query, now, pool).await;
        }
        // A read of its own, opened in one round trip (`read_scope`).
        let read = read_scope::ReadScope::lookups(&self.pool, actor.team).await?;
        let found =
            lexical::search(read.client()?, actor, query, now, pool, self.prune_lexical).await;
        read.release();
        found
    }

    async fn neighbours(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        now: Timestamp,
        hits: Vec<Evidence>,
        window: usize,
    ) -> Result<HashMap<EvidenceId, Neighbours>> {
        // Nothing to read opens no transaction (each costs round trips: see `begin`).
        if window == 0 || hits.iter().all(|hit| hit.source_key.is_none()) {
            return Ok(HashMap::new());
        }
        scoped_read!(self, actor.team, |session| {
            recall_branches::neighbours(session, actor, query, now, &hits, window)
        })
    }

    async fn scopes(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<mnem_core::Scope>> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        recall_branches::scopes(&tx, actor, query, now, limit).await
    }

    async fn texts_in_period(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        cap: usize,
    ) -> Result<Option<usize>> {
        scoped_read!(self, actor.team, |session| {
            recall_branches::texts_in_period(session, actor, query, cap)
        })
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
        scoped_read!(self, actor.team, |session| {
            mentions::mentioned(session, actor, query, now, &keys, max_items, &known)
        })
    }

    async fn reading_together<F>(&self, actor: &Actor, reads: F) -> F::Output
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        read_scope::reading_together(&self.pool, actor.team, reads).await
    }
}

impl GraphStore for PgStore {
    async fn open_profile(&self, team: &str, profile: &str) -> Result<Actor> {
        let team = validate_team_name(team)?;
        let profile = validate_profile_name(profile)?;
        let now = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, None, false).await?;
        let actor = ensure_profile(&tx, team, profile, now).await?;
        tx.commit().await.db()?;
        Ok(actor)
    }

    async fn profile_names(
        &self,
        actor: &Actor,
        ids: Vec<ProfileId>,
    ) -> Result<Vec<(ProfileId, String)>> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        let sql = mnem_sql::select_profile_names("$1", "{id} = ANY ($2)");
        let listed: Vec<uuid::Uuid> = ids.iter().map(|id| id.0).collect();
        let rows = tx.query(&sql, &[&actor.team.0, &listed]).await.db()?;
        rows.iter()
            .map(|row| Ok((ProfileId(rows::col(row, 0)?), rows::col(row, 1)?)))
            .collect()
    }

    async fn replayed(
        &self,
        actor: &Actor,
        key: &str,
        request_hash: &str,
    ) -> Result<Option<RememberOutcome>> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        graph_write::replayed(&PgRows { tx: &tx }, actor, key, request_hash).await
    }

    async fn commit_remember(
        &self,
        actor: &Actor,
        request: VerifiedRemember,
    ) -> Result<RememberOutcome> {
        let now = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), false).await?;
        lock_team_graph(&tx, actor.team).await?;
        let outcome =
            graph_write::commit_remember(&PgRows { tx: &tx }, actor, request, now).await?;
        tx.commit().await.db()?;
        Ok(outcome)
    }

    async fn retract_evidence(
        &self,
        actor: &Actor,
        ids: Vec<EvidenceId>,
        reason: Option<String>,
    ) -> Result<Vec<EvidenceId>> {
        let at = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), false).await?;
        lock_team_graph(&tx, actor.team).await?;
        let rows = PgRows { tx: &tx };
        let kept = graph_write::retract_evidence(&rows, actor, &ids, reason.as_deref(), at).await?;
        tx.commit().await.db()?;
        Ok(kept)
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
        let at = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), false).await?;
        lock_team_graph(&tx, actor.team).await?;
        graph_write::release_evidence(&PgRows { tx: &tx }, actor, &ids, &reason, at).await?;
        tx.commit().await.db()
    }

    async fn quarantined(&self, actor: &Actor, limit: usize) -> Result<Vec<EvidenceId>> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        let rows = prepared::query(
            &tx,
            "SELECT evidence_id FROM evidence \
             WHERE team_id = $1 AND state = 'quarantined' \
             AND (space = 'team' OR owner_profile_id = $2) \
             ORDER BY recorded_at DESC, evidence_id DESC LIMIT $3",
            &[&actor.team.0, &actor.profile.0, &(limit as i64)],
        )
        .await?;
        Ok(rows.iter().map(|row| EvidenceId(row.get(0))).collect())
    }

    async fn forget(&self, actor: &Actor, ids: Vec<EvidenceId>) -> Result<()> {
        let at = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), false).await?;
        lock_team_graph(&tx, actor.team).await?;
        graph_write::forget(&PgRows { tx: &tx }, actor, &ids, at).await?;
        tx.commit().await.db()
    }

    async fn relationship(&self, actor: &Actor, id: RelationshipId) -> Result<Relationship> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        graph::relationships::relationship(&tx, actor, id, &GraphView::default()).await
    }

    async fn commit_correction(
        &self,
        actor: &Actor,
        correction: VerifiedCorrection,
    ) -> Result<RelationshipOutcome> {
        let now = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), false).await?;
        lock_team_graph(&tx, actor.team).await?;
        let outcome =
            graph_write::commit_correction(&PgRows { tx: &tx }, actor, correction, now).await?;
        tx.commit().await.db()?;
        Ok(outcome)
    }

    async fn export_pack(
        &self,
        actor: &Actor,
        selection: PackSelection,
        max_bytes: Option<usize>,
    ) -> Result<Pack> {
        let exported_at = self.clock.now();
        let mut client = self.client().await?;
        // Repeatable read: every read of the export sees one snapshot.
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .db()?;
        set_team(&tx, actor.team).await?;
        mnem_store::pack::export(
            &PgRows { tx: &tx },
            actor,
            selection,
            exported_at,
            max_bytes,
        )
        .await
    }

    async fn import_pack(&self, actor: &Actor, pack: Pack, mode: ImportMode) -> Result<PackImport> {
        let now = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), false).await?;
        lock_team_graph(&tx, actor.team).await?;
        let report = mnem_store::pack::import(&PgRows { tx: &tx }, actor, &pack, mode, now).await?;
        tx.commit().await.db()?;
        Ok(report)
    }

    async fn trace(&self, actor: &Actor, id: RelationshipId, view: GraphView) -> Result<Trace> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        trace_read::trace(&PgRows { tx: &tx }, actor, id, &view).await
    }

    async fn entities_named(
        &self,
        actor: &Actor,
        names: Vec<String>,
    ) -> Result<Vec<(EntityId, String)>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        scoped_read!(self, actor.team, |session| {
            graph::discovery::entities_named(session, actor, &names)
        })
    }

    async fn adjacency(
        &self,
        actor: &Actor,
        entities: Vec<EntityId>,
        view: GraphView,
        fanout: usize,
    ) -> Result<Vec<Adjacency>> {
        if entities.is_empty() {
            return Ok(Vec::new());
        }
        scoped_read!(self, actor.team, |session| {
            graph::discovery::adjacency(session, actor, &entities, &view, fanout)
        })
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
        let search = graph::discovery::SeedSearch {
            vector,
            contract,
            min_similarity,
            limit,
            exact: self.vector_search == VectorSearch::Exact,
        };
        scoped_read!(self, actor.team, |session| {
            graph::discovery::graph_vector_seeds(session, actor, &search, &view)
        })
    }

    async fn evidence_support(
        &self,
        actor: &Actor,
        evidence: Vec<EvidenceId>,
        view: GraphView,
    ) -> Result<HashMap<EvidenceId, Support>> {
        if evidence.is_empty() {
            return Ok(HashMap::new());
        }
        scoped_read!(self, actor.team, |session| {
            graph::discovery::evidence_support(session, actor, &evidence, &view)
        })
    }

    async fn edges_supported_by(
        &self,
        actor: &Actor,
        evidence: Vec<EvidenceId>,
        view: GraphView,
        limit: usize,
    ) -> Result<Vec<GraphEdge>> {
        if evidence.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        scoped_read!(self, actor.team, |session| {
            graph::discovery::edges_supported_by(session, actor, &evidence, &view, limit)
        })
    }

    async fn dream_inputs(&self, actor: &Actor, limit: usize) -> Result<Vec<Relationship>> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        hypotheses::dream_inputs(&tx, actor, limit).await
    }

    async fn record_hypotheses(
        &self,
        actor: &Actor,
        proposed: Vec<ProposedHypothesis>,
    ) -> Result<HypothesisPass> {
        let now = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), false).await?;
        let pass = hypotheses::record(&tx, actor, &proposed, now).await?;
        tx.commit().await.db()?;
        Ok(pass)
    }

    async fn hypotheses(&self, actor: &Actor, filter: HypothesisFilter) -> Result<Vec<Hypothesis>> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        hypotheses::list(&tx, actor, &filter).await
    }

    async fn resolve_hypothesis(
        &self,
        actor: &Actor,
        id: HypothesisId,
        resolution: HypothesisResolution,
    ) -> Result<Hypothesis> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), false).await?;
        let resolved = hypotheses::resolve(&tx, actor, id, &resolution).await?;
        tx.commit().await.db()?;
        Ok(resolved)
    }

    async fn record_model_reading(
        &self,
        actor: &Actor,
        id: HypothesisId,
        reading: ModelReading,
    ) -> Result<bool> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), false).await?;
        let written = hypotheses::record_model_reading(&tx, actor, id, &reading).await?;
        tx.commit().await.db()?;
        Ok(written)
    }

    async fn record_communities(
        &self,
        actor: &Actor,
        found: Vec<DetectedCommunity>,
        fingerprint: String,
        relationships: usize,
    ) -> Result<CommunityPass> {
        let now = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), false).await?;
        lock_team_graph(&tx, actor.team).await?;
        let pass =
            communities::record(&tx, actor, &found, &fingerprint, relationships, now).await?;
        tx.commit().await.db()?;
        Ok(pass)
    }

    async fn communities(&self, actor: &Actor, filter: CommunityFilter) -> Result<Vec<Community>> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), true).await?;
        communities::list(&tx, actor, &filter).await
    }
}

impl PgStore {
    /// Validated records settled against the team's stored texts
    /// ([`mnem_store::dedup`]) and written in one transaction: the fresh ones inserted
    /// set-based, the repeated ones recorded as writes of the items they repeat.
    async fn store_records(&self, actor: &Actor, records: Vec<NewRecord>) -> Result<Settled> {
        let now = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), false).await?;
        let rows = PgRows { tx: &tx };
        let mut settled = mnem_store::dedup::settle(&rows, actor, records, now).await?;
        let older = graph_write::place_revisions(&rows, actor, &mut settled).await?;
        // Set-based: one statement per table. The statistics trigger locks the team's
        // row before any term's (in key order), so two writers of a team queue rather
        // than deadlock on its terms' rows.
        let fresh: Vec<(&Evidence, Option<&str>)> = settled
            .fresh
            .iter()
            .map(|(evidence, hold)| (evidence, hold.as_deref()))
            .collect();
        if !fresh.is_empty() {
            insert_evidence_batch(&tx, &fresh).await?;
        }
        settled.record(&rows, actor).await?;
        graph_write::supersede_older_revisions(&rows, actor, &older, now).await?;
        tx.commit().await.db()?;
        Ok(settled)
    }

    async fn move_evidence(
        &self,
        actor: &Actor,
        ids: Vec<EvidenceId>,
        state: LifecycleState,
        reason: Option<String>,
    ) -> Result<()> {
        let at = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, Some(actor.team), false).await?;
        lock_team_graph(&tx, actor.team).await?;
        let rows = PgRows { tx: &tx };
        graph_write::move_evidence(&rows, actor, &ids, state, reason.as_deref(), at).await?;
        tx.commit().await.db()
    }
}

impl SearchIndex for PgStore {
    async fn recorded_contract(&self) -> Result<Option<EmbeddingContract>> {
        let client = self.client().await?;
        embedding_queue::recorded_contract(as_client(&client)).await
    }

    async fn activate_contract(&self, contract: &EmbeddingContract) -> Result<()> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, None, false).await?;
        embedding_queue::activate_contract(&tx, contract).await?;
        tx.commit().await.db()?;
        migrations::ensure_vector_indexes(&self.owner, contract.dims).await
    }

    async fn reindex(&self, contract: &EmbeddingContract) -> Result<u64> {
        let now = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, None, false).await?;
        let queued = embedding_queue::reindex(&tx, contract, now).await?;
        tx.commit().await.db()?;
        migrations::ensure_vector_indexes(&self.owner, contract.dims).await?;
        Ok(queued)
    }

    async fn pending_documents(&self, limit: usize) -> Result<Vec<PendingDocument>> {
        let now = self.clock.now();
        let mut client = self.client().await?;
        embedding_queue::claim_pending(&mut client, limit, now, None).await
    }

    async fn team_pending_documents(
        &self,
        team: TeamId,
        limit: usize,
    ) -> Result<Vec<PendingDocument>> {
        let now = self.clock.now();
        let mut client = self.client().await?;
        embedding_queue::claim_pending(&mut client, limit, now, Some(team)).await
    }

    async fn store_vectors(
        &self,
        contract: &EmbeddingContract,
        vectors: Vec<(PendingDocument, Vec<f32>)>,
    ) -> Result<()> {
        let now = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, None, false).await?;
        embedding_queue::store_vectors(&tx, contract, &vectors, now).await?;
        tx.commit().await.db()
    }

    async fn record_failures(
        &self,
        failures: Vec<(PendingDocument, String)>,
        max_attempts: u32,
    ) -> Result<()> {
        let now = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, None, false).await?;
        embedding_queue::record_failures(&tx, &failures, max_attempts, now).await?;
        tx.commit().await.db()
    }

    async fn freshness(&self, now: Timestamp) -> Result<SearchFreshness> {
        let client = self.client().await?;
        embedding_queue::freshness(as_client(&client), now).await
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
        // A read of its own, opened in one round trip (`read_scope`).
        let read = read_scope::ReadScope::read(&self.pool, actor.team).await?;
        let found = recall_branches::vector(
            read.client()?,
            actor,
            query,
            vector,
            contract,
            now,
            pool,
            self.vector_plan(),
        )
        .await;
        read.release();
        found
    }

    async fn record_degradation(&self, degradation: Degradation) -> Result<()> {
        let client = self.client().await?;
        embedding_queue::set_meta(
            as_client(&client),
            embedding_queue::DEGRADATION_KEY,
            &degradation,
        )
        .await
    }

    async fn last_degradation(&self) -> Result<Option<Degradation>> {
        let client = self.client().await?;
        embedding_queue::meta(as_client(&client), embedding_queue::DEGRADATION_KEY).await
    }
}

/// Resolves (creating on first use) a team and one of its profiles by name; leaves the
/// transaction scoped to that team.
pub(crate) async fn ensure_profile(
    tx: &impl prepared::Session,
    team: &str,
    profile: &str,
    now: Timestamp,
) -> Result<Actor> {
    // Two servers may create the same team at once: insert-or-nothing, then read.
    tx.execute(
        "INSERT INTO teams (team_id, name, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (name) DO NOTHING",
        &[&new_uuid_v7(now), &team, &now.as_micros()],
    )
    .await
    .db()?;
    let team_id = TeamId(col(
        &tx.query_one("SELECT team_id FROM teams WHERE name = $1", &[&team])
            .await
            .db()?,
        0,
    )?);
    set_team(tx, team_id).await?;
    tx.execute(
        "INSERT INTO profiles (team_id, profile_id, name, created_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (team_id, name) DO NOTHING",
        &[&team_id.0, &new_uuid_v7(now), &profile, &now.as_micros()],
    )
    .await
    .db()?;
    let profile_id = ProfileId(col(
        &tx.query_one(
            "SELECT profile_id FROM profiles WHERE team_id = $1 AND name = $2",
            &[&team_id.0, &profile],
        )
        .await
        .db()?,
        0,
    )?);
    Ok(Actor {
        team: team_id,
        profile: profile_id,
    })
}

/// Inserts a new record with its first lifecycle event and queues it for embedding;
/// `reason` explains a state other than `current`.
pub(crate) async fn insert_evidence(
    tx: &deadpool_postgres::Transaction<'_>,
    e: &Evidence,
    reason: Option<&str>,
) -> Result<()> {
    insert_evidence_batch(tx, &[(e, reason)]).await
}

/// Inserts new records, each with its first lifecycle event and (when `current`) queued
/// for embedding, in one statement per table whatever the batch's size: the team's
/// term statistics are then counted once per statement (migration 0006), and the batch
/// costs a few round trips. Each `reason` explains a state other than `current`.
pub(crate) async fn insert_evidence_batch(
    tx: &deadpool_postgres::Transaction<'_>,
    records: &[(&Evidence, Option<&str>)],
) -> Result<()> {
    let mut rows = EvidenceRows::default();
    for (e, reason) in records {
        rows.push(e, *reason)?;
    }
    let r = &rows;
    // Full text on mnem's own terms: the team's statistics follow by trigger (migrations
    // 0006 and 0013), the posting lists from the docs the rows were given.
    let inserted = prepared::query(
        tx,
        "INSERT INTO evidence (team_id, evidence_id, owner_profile_id, content, kind, \
         source_type, source, authority, source_group, source_key, source_revision, labels, \
         refs, scope, scope_depth, space, observed_at, recorded_at, expires_at, content_hash, \
         state, term_freqs, text_length) \
         SELECT team_id, evidence_id, owner_profile_id, content, kind, source_type, source, \
         authority, source_group, source_key, source_revision, labels, refs, scope, \
         scope_depth, space, observed_at, recorded_at, expires_at, content_hash, state, \
         term_freqs::jsonb, text_length \
         FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], \
         $7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[], $12::text[], \
         $13::text[], $14::text[], $15::bigint[], $16::text[], $17::bigint[], $18::bigint[], \
         $19::bigint[], $20::text[], $21::text[], $22::text[], $23::bigint[]) \
         AS v (team_id, evidence_id, owner_profile_id, content, kind, source_type, source, \
         authority, source_group, source_key, source_revision, labels, refs, scope, \
         scope_depth, space, observed_at, recorded_at, expires_at, content_hash, state, \
         term_freqs, text_length) \
         RETURNING evidence_id, doc",
        &[
            &r.teams,
            &r.ids,
            &r.owners,
            &r.contents,
            &r.kinds,
            &r.source_types,
            &r.sources,
            &r.authorities,
            &r.source_groups,
            &r.source_keys,
            &r.source_revisions,
            &r.labels,
            &r.refs,
            &r.scopes,
            &r.scope_depths,
            &r.spaces,
            &r.observed_at,
            &r.recorded_at,
            &r.expires_at,
            &r.content_hashes,
            &r.states,
            &r.term_freqs,
            &r.text_lengths,
        ],
    )
    .await?;
    index_texts(tx, r, &inserted).await?;
    embedding_queue::enqueue_batch(tx, embedding_queue::EVIDENCE_DOCUMENT, &r.queued).await?;
    if !r.ref_rows.0.is_empty() {
        let (teams, kinds, ref_ids, ids) = &r.ref_rows;
        prepared::execute(
            tx,
            "INSERT INTO evidence_refs (team_id, ref_kind, ref_id, evidence_id) \
             SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::uuid[]) \
             ON CONFLICT DO NOTHING",
            &[teams, kinds, ref_ids, ids],
        )
        .await?;
    }
    // A new record's first event: `seq` is computed as `append_event` computes it.
    prepared::execute(
        tx,
        "INSERT INTO evidence_events (team_id, evidence_id, seq, state, actor_profile_id, at, \
         reason) SELECT v.team_id, v.evidence_id, (SELECT COALESCE(MAX(x.seq), 0) + 1 \
         FROM evidence_events x WHERE x.team_id = v.team_id AND x.evidence_id = v.evidence_id), \
         v.state, v.owner, v.at, v.reason \
         FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[], $5::bigint[], $6::text[]) \
         AS v (team_id, evidence_id, state, owner, at, reason)",
        &[
            &r.teams,
            &r.ids,
            &r.states,
            &r.owners,
            &r.recorded_at,
            &r.reasons,
        ],
    )
    .await?;
    Ok(())
}

/// Adds the inserted rows' texts (their docs as the insert returned them) to their
/// teams' posting lists, a team at a time in team order (the order the statistics
/// trigger locked them in).
async fn index_texts(
    tx: &deadpool_postgres::Transaction<'_>,
    rows: &EvidenceRows<'_>,
    inserted: &[tokio_postgres::Row],
) -> Result<()> {
    let mut docs: HashMap<Uuid, i64> = HashMap::with_capacity(inserted.len());
    for row in inserted {
        docs.insert(col(row, 0)?, col(row, 1)?);
    }
    let mut by_team: std::collections::BTreeMap<Uuid, Vec<(i64, &DocumentTerms)>> =
        Default::default();
    for ((team, id), terms) in rows.teams.iter().zip(&rows.ids).zip(&rows.terms) {
        if terms.length == 0 {
            continue;
        }
        let doc = *docs.get(id).ok_or_else(|| {
            StoreError::backend(std::io::Error::other(
                "an inserted record's doc was not returned",
            ))
        })?;
        by_team.entry(*team).or_default().push((doc, terms));
    }
    for (team, texts) in by_team {
        lexical::index(tx, team, &texts).await?;
    }
    let mut mentioning: Vec<(Uuid, i64, &str)> = Vec::with_capacity(rows.ids.len());
    for ((team, id), content) in rows.teams.iter().zip(&rows.ids).zip(&rows.contents) {
        if let Some(doc) = docs.get(id) {
            mentioning.push((*team, *doc, content));
        }
    }
    mentions::index(tx, &mentioning).await
}

/// A batch of evidence records as one array per column, for `unnest`.
#[derive(Default)]
struct EvidenceRows<'a> {
    teams: Vec<Uuid>,
    ids: Vec<Uuid>,
    owners: Vec<Uuid>,
    contents: Vec<&'a str>,
    kinds: Vec<&'a str>,
    source_types: Vec<&'static str>,
    sources: Vec<&'a str>,
    authorities: Vec<&'static str>,
    source_groups: Vec<&'a str>,
    source_keys: Vec<Option<&'a str>>,
    source_revisions: Vec<Option<i64>>,
    labels: Vec<String>,
    refs: Vec<String>,
    scopes: Vec<String>,
    scope_depths: Vec<i64>,
    spaces: Vec<&'static str>,
    observed_at: Vec<i64>,
    recorded_at: Vec<i64>,
    expires_at: Vec<Option<i64>>,
    content_hashes: Vec<&'a str>,
    states: Vec<&'static str>,
    term_freqs: Vec<String>,
    text_lengths: Vec<i64>,
    /// Each text's terms, for its postings.
    terms: Vec<DocumentTerms>,
    reasons: Vec<Option<&'a str>>,
    /// (team, id, recorded_at) of each `current` record: its embedding job.
    queued: Vec<(TeamId, Uuid, Timestamp)>,
    /// `evidence_refs` rows: team, kind, ref id, evidence id.
    ref_rows: (Vec<Uuid>, Vec<&'a str>, Vec<&'a str>, Vec<Uuid>),
}

impl<'a> EvidenceRows<'a> {
    fn push(&mut self, e: &'a Evidence, reason: Option<&'a str>) -> Result<()> {
        let terms = mnem_core::lexical::document_terms(&e.content);
        self.teams.push(e.team.0);
        self.ids.push(e.id.0);
        self.owners.push(e.owner.0);
        self.contents.push(&e.content);
        self.kinds.push(&e.kind);
        self.source_types.push(e.source_type.as_str());
        self.sources.push(&e.source);
        self.authorities.push(e.authority.as_str());
        self.source_groups.push(&e.source_group);
        self.source_keys.push(e.source_key.as_deref());
        self.source_revisions.push(e.source_revision);
        self.labels
            .push(serde_json::to_string(&e.labels).map_err(StoreError::backend)?);
        self.refs
            .push(serde_json::to_string(&e.refs).map_err(StoreError::backend)?);
        self.scopes.push(e.scope.to_path());
        self.scope_depths.push(e.scope.depth() as i64);
        self.spaces.push(e.space.as_str());
        self.observed_at.push(e.observed_at.as_micros());
        self.recorded_at.push(e.recorded_at.as_micros());
        self.expires_at.push(e.expires_at.map(Timestamp::as_micros));
        self.content_hashes.push(&e.content_hash);
        self.states.push(e.state.as_str());
        self.term_freqs.push(terms.frequencies_json());
        self.text_lengths.push(i64::from(terms.length));
        self.terms.push(terms);
        self.reasons.push(reason);
        if e.state == LifecycleState::Current {
            self.queued.push((e.team, e.id.0, e.recorded_at));
        }
        for r in &e.refs {
            self.ref_rows.0.push(e.team.0);
            self.ref_rows.1.push(&r.kind);
            self.ref_rows.2.push(&r.id);
            self.ref_rows.3.push(e.id.0);
        }
        Ok(())
    }
}

pub(crate) async fn append_event(
    tx: &deadpool_postgres::Transaction<'_>,
    actor: &Actor,
    id: EvidenceId,
    state: LifecycleState,
    at: Timestamp,
    reason: Option<&str>,
) -> Result<()> {
    prepared::execute(
        tx,
        "INSERT INTO evidence_events (team_id, evidence_id, seq, state, actor_profile_id, at, \
         reason) VALUES ($1, $2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM evidence_events \
         WHERE team_id = $1 AND evidence_id = $2), $3, $4, $5, $6)",
        &[
            &actor.team.0,
            &id.0,
            &state.as_str(),
            &actor.profile.0,
            &at.as_micros(),
            &reason,
        ],
    )
    .await?;
    Ok(())
}

/// One record the actor may see, in any lifecycle state; otherwise `NotFound`.
pub(crate) async fn visible_evidence(
    tx: &deadpool_postgres::Transaction<'_>,
    actor: &Actor,
    id: EvidenceId,
) -> Result<Evidence> {
    let row = prepared::query_opt(
        tx,
        &format!(
            "SELECT {EVIDENCE_COLUMNS} FROM evidence e \
             WHERE e.team_id = $1 AND e.evidence_id = $2 \
             AND (e.space = 'team' OR e.owner_profile_id = $3)"
        ),
        &[&actor.team.0, &id.0, &actor.profile.0],
    )
    .await?;
    match row {
        Some(row) => evidence_from_row(&row),
        None => Err(StoreError::NotFound { id }),
    }
}
