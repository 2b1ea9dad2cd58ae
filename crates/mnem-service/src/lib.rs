//! The service layer: the operations every transport (CLI, MCP, HTTP) calls. It owns the
//! I/O order of a recall — one clock reading, one query embedding, the backend's
//! branches — and hands ranking to `mnem_core::pipeline`. It also runs the embedding
//! worker that turns pending search documents into vectors.
//!
//! Architecture invariant: no ranking decisions here and no SQL; transports hold no
//! logic beyond parsing and rendering.

mod auth;
mod chat;
mod communities;
mod dream;
mod feedback;
mod graph;
mod hypothesis_model;
mod import;
mod pack;
mod query_vectors;
mod shown;
mod verifier;
mod worker;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnem_core::follow;
use mnem_core::graph::{DiscoveryLimits, DiscoveryPath, DEFAULT_MODEL_CONFIDENCE};
use mnem_core::hop::{self, MentionRead};
use mnem_core::pipeline::fit_recall_budget;
use mnem_core::window::{self, WindowStep};
use mnem_core::{
    rank_all, Actor, Branch, BranchCandidates, EmbeddingContract, Evidence, EvidenceId, Neighbours,
    NewEvidence, RankingProfile, RecallHit, RecallPlan, RecallQuery, Scope, Timestamp,
    ValidationError, DEFAULT_PROFILE, SMALL_PERIOD,
};
use mnem_embed::Embedder;
use mnem_store::{
    Degradation, GraphStore, GraphView, Remembered, SearchFreshness, SearchIndex, StoreError,
};
use query_vectors::{QueryVectors, QUERY_VECTORS_KEPT};
use serde::Serialize;
use thiserror::Error;

pub use auth::{AuthError, Authenticator, IssuedKey, SessionKey};
pub use chat::ChatConfig;
pub use communities::{CommunityReport, MAX_COMMUNITY_SUMMARIES};
pub use dream::{
    spawn_deriver, DreamReport, HypothesisDecision, Resolved, DEFAULT_DREAM_LIMIT,
    MAX_RELATED_HYPOTHESES, MAX_TEAMS_PER_PASS,
};
pub use feedback::REPLAY_LIMIT;
pub use graph::{HeldEvidence, DISCOVERY_TIME_BUDGET, MAX_HELD_LISTED, MAX_IDS_PER_CALL};
pub use hypothesis_model::{
    parse_reading, ChatHypothesisModel, HypothesisModel, MAX_MODEL_READINGS_PER_PASS,
};
pub use import::{ImportReport, IMPORT_BATCH};
pub use shown::{NamedTrace, Shown};
pub use verifier::{parse_judgement, ChatVerifier, EntailmentModel};
pub use worker::{
    spawn_worker, EmbedReport, EMBED_BATCH, MAX_EMBED_ATTEMPTS, OWN_WRITE_BATCH,
    OWN_WRITE_EMBED_BUDGET,
};

#[derive(Debug, Error)]
pub enum ServiceError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A branch the ranking profile requires could not run.
    #[error("required dependency unavailable: {what}: {reason}")]
    Dependency { what: &'static str, reason: String },
}

pub type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// The most scopes one [`Memory::scopes`] read lists.
pub const MAX_SCOPES_LISTED: usize = 1_000;

/// The answer to a recall: ranked hits, plus the branches that were skipped (internal
/// telemetry; never part of the public result).
#[derive(Debug, Clone)]
pub struct Recall {
    pub hits: Vec<RecallHit>,
    pub degraded: Vec<Degradation>,
    /// Time spent embedding the query (zero when the vector branch did not run): recall
    /// latency is reported with and without it.
    pub query_embedding: Duration,
    /// Follow-up hints chosen after `hits` were fixed; never evidence.
    pub discovery_paths: Vec<DiscoveryPath>,
    /// Time spent choosing discovery paths.
    pub discovery: Duration,
    /// Time spent reading and assembling evidence windows, the follow-on credit that
    /// shares their first read included (zero with `window` 0).
    pub windows: Duration,
    /// Only when the query asked (`include_hypotheses`): hypotheses linked to the hits or
    /// paths, kept apart from them.
    pub related_hypotheses: Option<Vec<mnem_core::graph::Hypothesis>>,
    /// Only when the query asked (`include_communities`): summaries of the communities
    /// around the results, in the result slots and bytes the results left unused.
    pub community_summaries: Option<Vec<mnem_core::graph::Community>>,
}

impl Recall {
    /// What a client is shown: results, discovery paths, and the optional fields that
    /// were asked for. Every transport renders this one shape.
    pub fn public(&self) -> mnem_core::PublicRecall {
        mnem_core::PublicRecall::new(&self.hits, self.discovery_paths.clone())
            .with_hypotheses(self.related_hypotheses.as_deref())
            .with_communities(self.community_summaries.as_deref())
    }

    /// The public shape with each result's score and its components: operator
    /// diagnostics (`--explain`, the console), never what an agent is handed.
    pub fn explained(&self) -> serde_json::Value {
        let mut out = serde_json::json!(self.public());
        if let Some(results) = out["results"].as_array_mut() {
            for (result, hit) in results.iter_mut().zip(&self.hits) {
                result["score"] = serde_json::json!(hit.score.value());
                result["components"] = serde_json::json!(hit.components);
            }
        }
        out
    }
}

/// One branch's read: `None` when the branch did not run.
type BranchRead = Option<mnem_store::Result<Vec<mnem_core::Candidate>>>;

/// What a recall read before ranking.
struct Gathered {
    plan: RecallPlan,
    branches: Vec<BranchCandidates>,
    degraded: Vec<Degradation>,
    query_embedding: Duration,
    query_vector: Option<Vec<f32>>,
}

/// Screens one evidence item, holding it (quarantine at write) when a rule fires. Logs
/// nothing: a write can still be refused, so the hold is logged once it is stored.
pub(crate) fn hold_if_flagged(new: &mut NewEvidence) {
    let findings = mnem_core::screen::screen(&new.content, new.source_type);
    new.quarantine = mnem_core::screen::quarantine_reason(&findings);
}

/// The tracing target of [`log_held`], so a transport that tells its caller about the
/// hold itself (the CLI's one-shot commands) can leave the log out.
pub const HELD_LOG_TARGET: &str = "mnem::held";

/// The operator's signal that a write was stored but held out of recall.
pub(crate) fn log_held(id: EvidenceId, reason: &str) {
    tracing::warn!(target: HELD_LOG_TARGET, evidence = %id, %reason, "evidence held at write (quarantined); `mnem release` after review");
}

/// A skipped branch, stamped with the recall's one clock reading.
fn degradation(branch: Branch, reason: String, at: Timestamp) -> Degradation {
    Degradation {
        branch: match branch {
            Branch::Lexical => "lexical".into(),
            Branch::Vector => "vector".into(),
        },
        reason,
        at,
    }
}

/// What `mnem status` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub ranking_profile_version: String,
    pub active_contract: Option<EmbeddingContract>,
    pub recorded_contract: Option<EmbeddingContract>,
    pub search_freshness: SearchFreshness,
    pub last_degradation: Option<Degradation>,
}

pub struct Memory<S> {
    store: S,
    embedder: Option<Arc<dyn Embedder>>,
    profile: RankingProfile,
    verifier: Option<Arc<dyn EntailmentModel>>,
    verifier_threshold: f64,
    /// Reads new hypotheses after a dream pass, when configured.
    hypothesis_model: Option<Arc<dyn HypothesisModel>>,
    discovery_limits: DiscoveryLimits,
    /// Recalls that ran without a branch, per branch (lexical, vector), since start: an
    /// operator's outage signal, exported by the server.
    degraded_recalls: [AtomicU64; 2],
    query_vectors: QueryVectors,
    /// Teams whose relationships may have changed since the last background pass
    /// (`Memory::derive_changed`), with an actor of each.
    graph_changed: std::sync::Mutex<std::collections::BTreeMap<mnem_core::TeamId, Actor>>,
}

impl<S: GraphStore + SearchIndex> Memory<S> {
    /// Wraps a store with an embedder (`None` = lexical-only). With an embedder, its
    /// contract must match the one the store records (or become it, for a new store);
    /// otherwise this refuses with `ContractMismatch` until a reindex.
    pub async fn open(store: S, embedder: Option<Arc<dyn Embedder>>) -> Result<Self> {
        if let Some(embedder) = &embedder {
            store.activate_contract(embedder.contract()).await?;
        }
        Ok(Self::unchecked(store, embedder))
    }

    /// Opens without checking the contract: for `status` and `reindex`, which must work
    /// exactly when the contract does not match.
    pub fn unchecked(store: S, embedder: Option<Arc<dyn Embedder>>) -> Self {
        Self {
            store,
            embedder,
            profile: DEFAULT_PROFILE,
            verifier: None,
            verifier_threshold: DEFAULT_MODEL_CONFIDENCE,
            hypothesis_model: None,
            discovery_limits: DiscoveryLimits::default(),
            degraded_recalls: Default::default(),
            query_vectors: QueryVectors::new(QUERY_VECTORS_KEPT),
            graph_changed: Default::default(),
        }
    }

    /// Adds a model verifier: a claim is entailed only when its spans check out and the
    /// model judges it so with at least `threshold` confidence.
    pub fn with_verifier(mut self, verifier: Arc<dyn EntailmentModel>, threshold: f64) -> Self {
        self.verifier = Some(verifier);
        self.verifier_threshold = threshold;
        self
    }

    /// Adds a model that phrases and scores each new hypothesis after a dream pass
    /// (beside the rule's statement, never instead of it).
    pub fn with_hypothesis_model(mut self, model: Arc<dyn HypothesisModel>) -> Self {
        self.hypothesis_model = Some(model);
        self
    }

    pub fn with_discovery_limits(mut self, limits: DiscoveryLimits) -> Self {
        self.discovery_limits = limits;
        self
    }

    pub fn with_profile(mut self, profile: RankingProfile) -> Self {
        self.profile = profile;
        self
    }

    pub fn profile(&self) -> &RankingProfile {
        &self.profile
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// Commits at once (full-text searchable on return); the vector is computed later by
    /// the embedding worker.
    ///
    /// Screened first (`mnem_core::screen`): an item that looks like an attempt to steer
    /// a later reader is stored `quarantined`, with the reason in its lifecycle log. A
    /// text the team already holds is answered with the stored item
    /// (`Remembered::duplicate`).
    pub async fn remember(&self, actor: &Actor, mut new: NewEvidence) -> Result<Remembered> {
        hold_if_flagged(&mut new);
        let held = new.quarantine.clone();
        let stored = self.store.remember(actor, new).await?;
        if let Some(reason) = held {
            log_held(stored.evidence.id, &reason);
        }
        Ok(stored)
    }

    /// Several writes in one transaction, each screened as [`Self::remember`] screens
    /// one: all are stored (held ones `quarantined`, each logged) or none is
    /// (`EvidenceStore::remember_batch`).
    pub async fn remember_batch(
        &self,
        actor: &Actor,
        mut items: Vec<NewEvidence>,
    ) -> Result<Vec<Remembered>> {
        let held: Vec<Option<String>> = items
            .iter_mut()
            .map(|new| {
                hold_if_flagged(new);
                new.quarantine.clone()
            })
            .collect();
        let stored = self.store.remember_batch(actor, items).await?;
        for (stored, reason) in stored.iter().zip(&held) {
            if let Some(reason) = reason {
                log_held(stored.evidence.id, reason);
            }
        }
        Ok(stored)
    }

    pub async fn recall(&self, actor: &Actor, query: RecallQuery) -> Result<Recall> {
        let Gathered {
            plan,
            mut branches,
            mut degraded,
            query_embedding,
            query_vector,
        } = self.gather(actor, query).await?;
        self.note_degradations(&degraded).await;
        // Every read from here to the discovery paths is one the store may answer from
        // one snapshot (on PostgreSQL, one transaction instead of one per read).
        let ranked_reads = async {
            self.attach_support(actor, &plan, &mut branches).await?;
            let ranked = rank_all(branches, &plan, actor, &self.profile);
            // The hop's and the follow-on read are the windows stage's first reads: timed
            // with it.
            let windows_started = Instant::now();
            let ranked = self.with_hop(actor, &plan, ranked).await?;
            let (ranked, read) = self.with_followers(actor, &plan, ranked).await?;
            let hits = self.with_windows(actor, &plan, ranked, read).await?;
            let windows = if plan.query.window > 0 {
                windows_started.elapsed()
            } else {
                Duration::ZERO
            };
            // Discovery runs only now, on fixed results: it cannot move evidence.
            let discovery_started = Instant::now();
            let discovery_paths = self
                .discover(actor, &plan.query, &hits, query_vector.as_deref())
                .await?;
            Ok::<_, ServiceError>((hits, windows, discovery_paths, discovery_started.elapsed()))
        };
        let (hits, windows, discovery_paths, discovery) =
            self.store.reading_together(actor, ranked_reads).await?;
        let (related_hypotheses, community_summaries) = self
            .derived_fields(actor, &plan.query, &hits, &discovery_paths, &mut degraded)
            .await;
        Ok(Recall {
            hits,
            degraded,
            query_embedding,
            discovery_paths,
            discovery,
            windows,
            related_hypotheses,
            community_summaries,
        })
    }

    /// Counts each skipped branch for the operator's metrics; an outage (not a recall that
    /// is lexical-only by configuration: that is reported with the recall only) is also
    /// logged as a warning and kept as the store's "last degraded".
    async fn note_degradations(&self, degraded: &[Degradation]) {
        for degradation in degraded {
            let slot = usize::from(degradation.branch == "vector");
            self.degraded_recalls[slot].fetch_add(1, Ordering::Relaxed);
            if self.embedder.is_none() {
                tracing::debug!(branch = %degradation.branch, reason = %degradation.reason, "recall branch degraded");
                continue;
            }
            tracing::warn!(branch = %degradation.branch, reason = %degradation.reason, "recall branch degraded");
            if let Err(err) = self.store.record_degradation(degradation.clone()).await {
                tracing::warn!(%err, "could not record degradation");
            }
        }
    }

    /// The optional derived fields a recall asked for, read last and kept in their own
    /// fields so they cannot touch results or paths; a failed read is omitted and added
    /// to `degraded`.
    async fn derived_fields(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        hits: &[RecallHit],
        discovery_paths: &[DiscoveryPath],
        degraded: &mut Vec<Degradation>,
    ) -> (
        Option<Vec<mnem_core::graph::Hypothesis>>,
        Option<Vec<mnem_core::graph::Community>>,
    ) {
        // Communities only ever fill free slots: with none, nothing to read for them.
        let free_slots = query.include_communities && query.limit > hits.len();
        let near = if query.include_hypotheses || free_slots {
            let view = GraphView {
                valid_at: query.valid_at,
                known_at: query.known_at,
            };
            self.near_results(actor, view, hits).await
        } else {
            Ok(Vec::new())
        };
        let hypotheses = if query.include_hypotheses {
            Some(
                self.related_hypotheses(actor, &near, discovery_paths, degraded)
                    .await,
            )
        } else {
            None
        };
        let communities = if query.include_communities {
            Some(
                self.community_summaries(actor, query, hits, &near, discovery_paths, degraded)
                    .await,
            )
        } else {
            None
        };
        (hypotheses, communities)
    }

    /// The candidates a ranked recall fuses, exactly as the store's branches return them
    /// for this profile (pool depth included), with the plan they were read for: what
    /// `mnem eval --fit` re-ranks offline under many profiles without asking the store again.
    /// Degradations are returned, not recorded.
    pub async fn candidates(
        &self,
        actor: &Actor,
        query: RecallQuery,
    ) -> Result<(RecallPlan, Vec<BranchCandidates>)> {
        let Gathered {
            plan, mut branches, ..
        } = self.gather(actor, query).await?;
        self.attach_support(actor, &plan, &mut branches).await?;
        Ok((plan, branches))
    }

    /// One clock reading, the query embedding, then both branches side by side (their
    /// candidates without the support signal: [`Self::attach_support`] reads it).
    async fn gather(&self, actor: &Actor, query: RecallQuery) -> Result<Gathered> {
        let query = query.validated().map_err(StoreError::from)?;
        let now = self.store.clock().now();
        let plan = RecallPlan::new(query, now);
        let mut degraded = Vec::new();
        // A listing reads through the full-text store's listing path; a ranked recall runs
        // the branches its profile names. Without the full-text branch the vector branch
        // is the recall, so its failure is the recall's failure.
        let run_lexical = plan.is_listing() || self.profile.lexical_branch;
        let run_vector = !plan.is_listing() && self.profile.vector_branch;
        let vector_required = self.profile.vector_required || !run_lexical;

        let embedding_started = Instant::now();
        let query_vector = if run_vector {
            match self.embed_query(&plan.query.query).await {
                Ok(vector) => Some(vector),
                Err(reason) if vector_required => {
                    return Err(ServiceError::Dependency {
                        what: "query embedding",
                        reason,
                    })
                }
                Err(reason) => {
                    degraded.push(degradation(Branch::Vector, reason, now));
                    None
                }
            }
        } else {
            None
        };

        let query_embedding = if run_vector {
            embedding_started.elapsed()
        } else {
            Duration::ZERO
        };
        let fusing = run_lexical && query_vector.is_some();
        let pool = plan.branch_pool(&self.profile, fusing);
        let vector_query = query_vector.as_deref();
        // With a hinted read, the same branches again inside the query's hinted period,
        // beside the first two, when that period is short enough to read directly.
        let hinted_reads = async {
            let Some(hinted) = plan.hinted_query(&self.profile) else {
                return Ok((None, None));
            };
            let texts = self
                .store
                .texts_in_period(actor, &hinted, SMALL_PERIOD + 1)
                .await?;
            if !RecallPlan::reads_hinted_period(texts) {
                return Ok((None, None));
            }
            let pool = self.profile.hinted_pool;
            Ok::<_, StoreError>(
                self.read_branches(actor, &hinted, vector_query, run_lexical, now, pool)
                    .await,
            )
        };
        let ((lexical, vector), hinted) = tokio::join!(
            self.read_branches(actor, &plan.query, vector_query, run_lexical, now, pool),
            hinted_reads
        );
        let (hinted_lexical, hinted_vector) = hinted?;
        let mut branches = Vec::new();
        if let Some(lexical) = lexical {
            // The full-text branch, when it runs, is required, and so is its hinted read.
            let mut candidates = lexical?;
            if let Some(hinted) = hinted_lexical {
                candidates = mnem_core::pipeline::with_hinted(candidates, hinted?);
            }
            branches.push(BranchCandidates {
                branch: Branch::Lexical,
                candidates,
            });
        }
        let vector = match (vector, hinted_vector) {
            (Some(Ok(candidates)), Some(Ok(hinted))) => {
                Some(Ok(mnem_core::pipeline::with_hinted(candidates, hinted)))
            }
            (Some(Ok(_)), Some(Err(err))) => Some(Err(err)),
            (vector, _) => vector,
        };
        match vector {
            Some(Ok(candidates)) => branches.push(BranchCandidates {
                branch: Branch::Vector,
                candidates,
            }),
            Some(Err(err)) if vector_required => return Err(err.into()),
            Some(Err(err)) => degraded.push(degradation(Branch::Vector, err.to_string(), now)),
            None => {}
        }
        Ok(Gathered {
            plan,
            branches,
            degraded,
            query_embedding,
            query_vector,
        })
    }

    /// The full-text and vector branches' candidates for `query`, `pool` deep, read side
    /// by side; each `None` when its branch does not run (no full text asked for, or no
    /// query vector).
    async fn read_branches(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        query_vector: Option<&[f32]>,
        run_lexical: bool,
        now: Timestamp,
        pool: usize,
    ) -> (BranchRead, BranchRead) {
        let lexical = async {
            if run_lexical {
                Some(self.store.lexical_candidates(actor, query, now, pool).await)
            } else {
                None
            }
        };
        let vector = async {
            match (query_vector, &self.embedder) {
                (Some(vector), Some(embedder)) => Some(
                    self.store
                        .vector_candidates(actor, query, vector, embedder.contract(), now, pool)
                        .await,
                ),
                _ => None,
            }
        };
        tokio::join!(lexical, vector)
    }

    /// The support signal's input ([`mnem_core::signals::Support`]): one store read for
    /// every candidate of a ranked recall, under the recall's time view, when the profile
    /// weighs tier or corroboration. A failed read fails the recall: support is read from
    /// authoritative rows, and ranking without it would silently change the profile.
    async fn attach_support(
        &self,
        actor: &Actor,
        plan: &RecallPlan,
        branches: &mut [BranchCandidates],
    ) -> Result<()> {
        let weighed = self.profile.tier_boost > 0.0 || self.profile.corroboration_boost > 0.0;
        if !weighed || plan.is_listing() {
            return Ok(());
        }
        let mut ids: Vec<EvidenceId> = branches
            .iter()
            .flat_map(|b| b.candidates.iter().map(|c| c.evidence.id))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(());
        }
        let view = GraphView {
            valid_at: plan.query.valid_at,
            known_at: plan.query.known_at,
        };
        let support = self.store.evidence_support(actor, ids, view).await?;
        for candidate in branches.iter_mut().flat_map(|b| b.candidates.iter_mut()) {
            if let Some(found) = support.get(&candidate.evidence.id) {
                candidate.support = *found;
            }
        }
        Ok(())
    }

    /// Follow-on credit ([`mnem_core::follow`]): one store read for the neighbours of each
    /// leading result in its group, scored by the core. The read goes as wide as the
    /// query's window, so the windows stage starts from it instead of asking again; it is
    /// returned for that. Nothing is read when the profile gives no credit.
    /// The entity hop ([`mnem_core::hop`]): items that mention a rare thing the query or
    /// a leading result mentions join the ranking. No read when the profile does not hop.
    async fn with_hop(
        &self,
        actor: &Actor,
        plan: &RecallPlan,
        ranked: Vec<RecallHit>,
    ) -> Result<Vec<RecallHit>> {
        let givers = hop::Givers::of(&ranked, plan, &self.profile);
        let known = ranked.iter().map(|hit| hit.evidence.id).collect();
        let read = self
            .read_mentions(actor, plan, givers.keys(), known)
            .await?;
        Ok(hop::hop_from(
            ranked,
            &givers,
            &read,
            plan,
            actor,
            &self.profile,
        ))
    }

    /// The hop's read for `keys` at the profile's hub cut-off, records only for items not
    /// in `known` (what the entity hop reads, and what `mnem eval --fit` reads for a
    /// whole pool).
    pub async fn read_mentions(
        &self,
        actor: &Actor,
        plan: &RecallPlan,
        keys: Vec<String>,
        known: HashSet<EvidenceId>,
    ) -> Result<MentionRead> {
        if keys.is_empty() {
            return Ok(MentionRead::default());
        }
        let read = self
            .store
            .mentioned(
                actor,
                &plan.query,
                plan.now,
                keys,
                self.profile.hop_max_mentions,
                known,
            )
            .await?;
        Ok(read)
    }

    async fn with_followers(
        &self,
        actor: &Actor,
        plan: &RecallPlan,
        ranked: Vec<RecallHit>,
    ) -> Result<(Vec<RecallHit>, HashMap<EvidenceId, Neighbours>)> {
        let leaders = follow::leaders(&ranked, plan, &self.profile);
        // Credit through a follow-up question reaches the second item after a leader.
        let reach = if self.profile.follow_through > 0.0 {
            2
        } else {
            1
        };
        let width = plan.query.window.max(reach);
        let read = self.group_neighbours(actor, plan, leaders, width).await?;
        let ranked = mnem_core::pipeline::settle(ranked, &read, plan, actor, &self.profile);
        Ok((ranked, read))
    }

    /// For each of `items` in a source group, up to `width` eligible neighbours on each
    /// side, nearest first; every item gets an entry. What evidence windows and follow-on
    /// credit read (`mnem eval --fit` reads it at width 1 for a whole pool).
    pub async fn group_neighbours(
        &self,
        actor: &Actor,
        plan: &RecallPlan,
        items: Vec<Evidence>,
        width: usize,
    ) -> Result<HashMap<EvidenceId, Neighbours>> {
        if items.is_empty() {
            return Ok(HashMap::new());
        }
        let ids: Vec<EvidenceId> = items.iter().map(|item| item.id).collect();
        let mut read = self
            .store
            .neighbours(actor, &plan.query, plan.now, items, width)
            .await?;
        // An item the store gave no entry (no source group after all) has no neighbours:
        // recorded, so a later round does not ask again.
        for id in ids {
            read.entry(id).or_default();
        }
        Ok(read)
    }

    /// The budgeted, limited results of a recall: with a window, each result carries its
    /// neighbours (read from the store in rounds until every result has its window;
    /// assembled by the core); without, the ranked hits alone.
    async fn with_windows(
        &self,
        actor: &Actor,
        plan: &RecallPlan,
        ranked: Vec<RecallHit>,
        already_read: HashMap<EvidenceId, Neighbours>,
    ) -> Result<Vec<RecallHit>> {
        let query = &plan.query;
        if query.window == 0 {
            // No windows: the ranked hits alone, exactly as `mnem_core::rank` finishes them.
            let mut hits = ranked;
            fit_recall_budget(&mut hits, query);
            hits.truncate(query.limit);
            return Ok(hits);
        }
        // What follow-on credit read, as wide as this window, is not asked for again.
        let mut neighbours = already_read;
        let (mut rounds, mut asked, mut reading) = (0, 0, Duration::ZERO);
        let mut results = loop {
            match window::assemble(&ranked, &neighbours, query, actor, plan.now) {
                WindowStep::Done(results) => break results,
                WindowStep::Read(hits) => {
                    rounds += 1;
                    asked += hits.len();
                    let started = Instant::now();
                    let read = self
                        .group_neighbours(actor, plan, hits, query.window)
                        .await?;
                    reading += started.elapsed();
                    neighbours.extend(read);
                }
            }
        };
        tracing::debug!(
            rounds,
            hits_asked = asked,
            read_ms = reading.as_secs_f64() * 1e3,
            "evidence windows read"
        );
        fit_recall_budget(&mut results, query);
        Ok(results)
    }

    /// One embedding of the query text, off the async executor; a recent query's vector
    /// comes from the cache.
    async fn embed_query(&self, text: &str) -> Result<Vec<f32>, String> {
        let embedder = self
            .embedder
            .clone()
            .ok_or_else(|| "no embedding provider configured (lexical-only)".to_string())?;
        if let Some(vector) = self.query_vectors.get(text) {
            return Ok(vector.to_vec());
        }
        let owned = text.to_string();
        let vector = tokio::task::spawn_blocking(move || embedder.embed(&[owned.as_str()]))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?
            .pop()
            .ok_or_else(|| "provider returned no vector".to_string())?;
        self.query_vectors.put(text, Arc::from(vector.as_slice()));
        Ok(vector)
    }

    /// How many recalls ran without each branch since this process started.
    pub fn degraded_recall_counts(&self) -> [(&'static str, u64); 2] {
        [
            ("lexical", self.degraded_recalls[0].load(Ordering::Relaxed)),
            ("vector", self.degraded_recalls[1].load(Ordering::Relaxed)),
        ]
    }

    /// The scopes of the evidence `actor` could recall now — at and under `under` when it
    /// is given, the whole team otherwise — in path order, at most `limit` (1 to
    /// [`MAX_SCOPES_LISTED`]).
    pub async fn scopes(
        &self,
        actor: &Actor,
        under: Option<Scope>,
        limit: usize,
    ) -> Result<Vec<Scope>> {
        if !(1..=MAX_SCOPES_LISTED).contains(&limit) {
            let reason = format!("must be between 1 and {MAX_SCOPES_LISTED}");
            return Err(StoreError::from(ValidationError::new("limit", reason)).into());
        }
        let query = RecallQuery {
            include_descendants: under.is_some(),
            scope: under,
            ..RecallQuery::default()
        }
        .validated()
        .map_err(StoreError::from)?;
        let now = self.store.clock().now();
        Ok(self.store.scopes(actor, &query, now, limit).await?)
    }

    pub async fn status(&self) -> Result<Status> {
        let now = self.store.clock().now();
        Ok(Status {
            ranking_profile_version: self.profile.version.to_string(),
            active_contract: self.embedder.as_ref().map(|e| e.contract().clone()),
            recorded_contract: self.store.recorded_contract().await?,
            search_freshness: self.store.freshness(now).await?,
            last_degradation: self.store.last_degradation().await?,
        })
    }

    /// Switches the store to the active embedder's contract and re-embeds everything.
    pub async fn reindex(&self) -> Result<EmbedReport> {
        let embedder = self.embedder.as_ref().ok_or(ServiceError::Dependency {
            what: "embedding provider",
            reason: "reindex needs an embedder; none is configured".into(),
        })?;
        self.store.reindex(embedder.contract()).await?;
        self.embed_pending().await
    }
}
