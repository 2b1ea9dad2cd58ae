//! `mnem bench --graph`: what discovery paths cost a recall. A seeded graph (entities
//! with Zipf-distributed degrees, so some are hubs) is written through the structured
//! remember path — every claim verified against its sentence — and the same queries are
//! recalled with discovery off (`path_limit` 0) and on, reporting latency, the time spent
//! on discovery, and the paths and bytes each recall returns.

use std::sync::Arc;
use std::time::Instant;

use mnem_core::graph::{DiscoveryPath, RememberRequest};
use mnem_core::{Actor, Clock, RankingProfile, RecallQuery, DEFAULT_PROFILE, LEXICAL_PROFILE};
use mnem_embed::Embedder;
use mnem_postgres::{PgStore, VectorSearch};
use mnem_service::Memory;
use mnem_sqlite::SqliteStore;
use mnem_store::{GraphStore, SearchIndex, SystemClock};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use serde::Serialize;
use serde_json::json;

use crate::hashing::HashingEmbedder;
use crate::report::Spread;
use crate::run::bar;
use crate::synthetic::spell;
use crate::EvalError;

const PREDICATES: &[&str] = &[
    "leads",
    "funds",
    "uses",
    "owns",
    "maintains",
    "reviews",
    "hosts",
    "supports",
    "audits",
    "builds",
    "trains",
    "advises",
];
/// Claims per evidence item, and items per request (the write contract allows 50).
const CLAIMS_PER_ITEM: usize = 2;
const ITEMS_PER_REQUEST: usize = 50;

pub struct GraphBenchOptions {
    pub evidence: usize,
    pub relationships: usize,
    pub entities: usize,
    pub queries: usize,
    pub seed: u64,
    pub progress: bool,
    /// Also measure PostgreSQL on this database, after SQLite, with the same graph and
    /// queries. The graph is written to a team of its own (`graph-bench-<stamp>`).
    pub database: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GraphBenchReport {
    pub seed: u64,
    pub evidence: usize,
    pub relationships: usize,
    pub entities: usize,
    pub queries: usize,
    pub largest_degree: usize,
    pub vectors: &'static str,
    /// Seconds to write (and embed) the graph, per backend.
    pub ingest: Vec<BackendIngest>,
    /// One dream pass over the ingested graph, per backend.
    pub dreams: Vec<DreamMeasure>,
    /// One community pass over the ingested graph, per backend.
    pub communities: Vec<CommunityMeasure>,
    pub rows: Vec<DiscoveryLatency>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DreamMeasure {
    pub backend: &'static str,
    /// Eligible relationships the pass read.
    pub relationships: usize,
    pub proposed: usize,
    /// Proposed per 1,000 relationships read.
    pub per_thousand: f64,
    pub millis: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CommunityMeasure {
    pub backend: &'static str,
    /// Eligible relationships the pass read.
    pub relationships: usize,
    pub communities: usize,
    /// Entities in the largest community.
    pub largest: usize,
    /// Read, Leiden, summaries and the write of the new version.
    pub millis: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BackendIngest {
    pub backend: &'static str,
    pub secs: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DiscoveryLatency {
    pub backend: &'static str,
    pub profile: String,
    pub path_limit: usize,
    /// Recalls asked for `related_hypotheses`.
    pub hypotheses: bool,
    pub mean_hypotheses: f64,
    /// Recalls asked for `community_summaries`.
    pub communities: bool,
    pub mean_communities: f64,
    /// The recalls' `min_score`, when set.
    pub min_score: Option<f64>,
    pub latency_ms: Spread,
    pub discovery_ms: Spread,
    pub mean_results: f64,
    pub mean_paths: f64,
    pub path_bytes: Spread,
}

/// A capitalised synthetic name for entity `n` (distinct per `n`).
fn entity_name(n: usize) -> String {
    let word = spell(n + 1_000);
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// The seeded graph as structured remember requests, and the questions asked of it:
/// drawn once, so every backend is given the same work.
struct Workload {
    requests: Vec<RememberRequest>,
    items: usize,
    claims: usize,
    largest_degree: usize,
    queries: Vec<String>,
}

fn workload(options: &GraphBenchOptions) -> Result<Workload, EvalError> {
    let mut rng = StdRng::seed_from_u64(options.seed);
    let degree = Zipf::new(options.entities as f64, 1.0)
        .map_err(|e| EvalError::Bench(format!("graph entities: {e}")))?;
    let pick = |rng: &mut StdRng| degree.sample(rng) as usize - 1;
    let mut degrees = vec![0usize; options.entities];

    let claims = options.relationships;
    let items = options.evidence.max(claims.div_ceil(CLAIMS_PER_ITEM));
    let mut requests = Vec::with_capacity(items.div_ceil(ITEMS_PER_REQUEST));
    let mut written_claims = 0;
    for first in (0..items).step_by(ITEMS_PER_REQUEST) {
        let mut evidence = Vec::new();
        let mut relationships = Vec::new();
        for index in 0..ITEMS_PER_REQUEST.min(items - first) {
            let mut text = String::new();
            for _ in 0..CLAIMS_PER_ITEM {
                if written_claims == claims {
                    break;
                }
                let subject = pick(&mut rng);
                let mut object = pick(&mut rng);
                if object == subject {
                    object = (object + 1) % options.entities;
                }
                degrees[subject] += 1;
                degrees[object] += 1;
                let predicate = PREDICATES[rng.random_range(0..PREDICATES.len())];
                let sentence = format!(
                    "{} {predicate} {}.",
                    entity_name(subject),
                    entity_name(object)
                );
                if !text.is_empty() {
                    text.push(' ');
                }
                let start = text.chars().count();
                text.push_str(&sentence);
                relationships.push(json!({
                    "subject": {"name": entity_name(subject)},
                    "predicate": predicate,
                    "object": {"entity": {"name": entity_name(object)}},
                    "supports": [{"evidence": index, "start": start, "end": start + sentence.chars().count()}]
                }));
                written_claims += 1;
            }
            if text.is_empty() {
                text = format!("note {} without claims", first + index);
            }
            evidence.push(
                json!({"content": text, "source": format!("source-{}", (first + index) % 97)}),
            );
        }
        requests.push(
            serde_json::from_value(json!({"evidence": evidence, "relationships": relationships}))
                .map_err(|e| EvalError::Bench(format!("generated request: {e}")))?,
        );
    }
    // Questions name an entity (chosen by degree, so hubs are asked about often) and a
    // predicate, as an agent would: "who leads Kalo".
    let queries = (0..options.queries)
        .map(|_| {
            let predicate = PREDICATES[rng.random_range(0..PREDICATES.len())];
            format!("who {predicate} {}", entity_name(pick(&mut rng)))
        })
        .collect();
    Ok(Workload {
        requests,
        items,
        claims: written_claims,
        largest_degree: degrees.iter().copied().max().unwrap_or(0),
        queries,
    })
}

pub async fn run(options: &GraphBenchOptions) -> Result<GraphBenchReport, EvalError> {
    if options.evidence == 0 || options.entities < 2 {
        return Err(EvalError::Bench(
            "the graph bench needs evidence and at least two entities".into(),
        ));
    }
    let work = workload(options)?;
    let mut ingest_secs = Vec::new();
    let mut rows = Vec::new();

    let dir = tempfile::tempdir()?;
    let path = dir.path().join("graph.db");
    let store = SqliteStore::open(&path, Arc::new(SystemClock))?;
    let (actor, secs) = ingest(&store, "graph-bench", &work, options).await?;
    ingest_secs.push(BackendIngest {
        backend: "sqlite",
        secs,
    });
    let mut dreams = vec![dream_pass("sqlite", &store, &actor).await?];
    let mut communities = vec![community_pass("sqlite", &store, &actor).await?];
    // The vector indexes (evidence and discovery vectors), as every process uses them.
    let ann_store = SqliteStore::open(&path, Arc::new(SystemClock))?.with_ann_threshold(0);
    let sqlite = Backend {
        name: "sqlite",
        actor: &actor,
        work: &work,
        options,
    };
    sqlite.time(LEXICAL, &store, &mut rows).await?;
    sqlite.time(HYBRID_EXACT, &store, &mut rows).await?;
    sqlite.time(HYBRID_HNSW, &ann_store, &mut rows).await?;

    if let Some(url) = &options.database {
        let store = PgStore::connect(url, Arc::new(SystemClock), 4).await?;
        let team = format!("graph-bench-{}", SystemClock.now().as_micros());
        let (actor, secs) = ingest(&store, &team, &work, options).await?;
        store.analyze().await?;
        ingest_secs.push(BackendIngest {
            backend: "postgres",
            secs,
        });
        dreams.push(dream_pass("postgres", &store, &actor).await?);
        communities.push(community_pass("postgres", &store, &actor).await?);
        // The statistics taken after ingest saw no hypotheses or communities; a long-lived server's
        // autovacuum would refresh them, the bench does it at once.
        store.analyze().await?;
        let postgres = Backend {
            name: "postgres",
            actor: &actor,
            work: &work,
            options,
        };
        postgres.time(LEXICAL, &store, &mut rows).await?;
        let exact = store.clone().with_vector_search(VectorSearch::Exact);
        postgres.time(HYBRID_EXACT, &exact, &mut rows).await?;
        postgres.time(HYBRID_HNSW, &store, &mut rows).await?;
    }
    Ok(GraphBenchReport {
        seed: options.seed,
        evidence: work.items,
        relationships: work.claims,
        entities: options.entities,
        queries: options.queries,
        largest_degree: work.largest_degree,
        vectors: "feature hashing (384 dims) for evidence, entity and relationship documents",
        ingest: ingest_secs,
        dreams,
        communities,
        rows,
    })
}

/// How many hypotheses the bench's dream pass may propose.
const DREAM_BENCH_LIMIT: usize = 1_000_000;

/// One dream pass over the team's graph, timed.
async fn dream_pass<S: GraphStore + SearchIndex + Clone>(
    backend: &'static str,
    store: &S,
    actor: &Actor,
) -> Result<DreamMeasure, EvalError> {
    let memory = Memory::open(store.clone(), None).await?;
    let started = Instant::now();
    // Far above a pass's default bound, so the rate is the rule table's, not the cap's.
    let report = memory.dream(actor, DREAM_BENCH_LIMIT).await?;
    let millis = started.elapsed().as_secs_f64() * 1e3;
    Ok(DreamMeasure {
        backend,
        relationships: report.relationships,
        proposed: report.proposed,
        per_thousand: report.proposed as f64 * 1_000.0 / report.relationships.max(1) as f64,
        millis,
    })
}

/// One community pass over the team's graph, timed.
async fn community_pass<S: GraphStore + SearchIndex + Clone>(
    backend: &'static str,
    store: &S,
    actor: &Actor,
) -> Result<CommunityMeasure, EvalError> {
    let memory = Memory::open(store.clone(), None).await?;
    let started = Instant::now();
    let report = memory.compute_communities(actor).await?;
    let millis = started.elapsed().as_secs_f64() * 1e3;
    let largest = memory
        .communities(actor, 1)
        .await?
        .first()
        .map_or(0, |c| c.entity_count);
    Ok(CommunityMeasure {
        backend,
        relationships: report.relationships,
        communities: report.communities,
        largest,
        millis,
    })
}

/// Writes the workload's requests through the service and embeds everything (evidence,
/// entity and relationship documents); returns the team's actor and the seconds taken.
async fn ingest<S: GraphStore + SearchIndex + Clone>(
    store: &S,
    team: &str,
    work: &Workload,
    options: &GraphBenchOptions,
) -> Result<(Actor, f64), EvalError> {
    let hashing: Arc<dyn Embedder> = Arc::new(HashingEmbedder::default());
    let memory = Memory::open(store.clone(), Some(hashing)).await?;
    let actor = store.open_team(team).await?;
    let progress = bar(options.progress, work.items, "graph ingest");
    let started = Instant::now();
    for request in &work.requests {
        let items = request.evidence.len();
        memory.remember_request(&actor, request.clone()).await?;
        progress.inc(items as u64);
    }
    memory.embed_pending().await?;
    progress.finish_and_clear();
    Ok((actor, started.elapsed().as_secs_f64()))
}

/// A recall profile as the bench labels it.
struct Profile {
    label: &'static str,
    profile: RankingProfile,
}
const LEXICAL: Profile = Profile {
    label: "lexical",
    profile: LEXICAL_PROFILE,
};
/// Hybrid on a store that scans the team's vectors exactly.
const HYBRID_EXACT: Profile = Profile {
    label: "hybrid",
    profile: DEFAULT_PROFILE,
};
/// Hybrid on a store that answers vector queries from an HNSW index.
const HYBRID_HNSW: Profile = Profile {
    label: "hybrid+hnsw",
    profile: DEFAULT_PROFILE,
};

/// One backend's ingested graph, timed with discovery off and on per profile.
struct Backend<'a> {
    name: &'static str,
    actor: &'a Actor,
    work: &'a Workload,
    options: &'a GraphBenchOptions,
}

impl Backend<'_> {
    async fn time<S: GraphStore + SearchIndex + Clone>(
        &self,
        profile: Profile,
        store: &S,
        rows: &mut Vec<DiscoveryLatency>,
    ) -> Result<(), EvalError> {
        let memory = Memory::open(store.clone(), Some(Arc::new(HashingEmbedder::default())))
            .await?
            .with_profile(profile.profile);
        let paths = mnem_core::graph::DEFAULT_PATH_LIMIT;
        // A floor of 0.9 keeps only strong matches, so results leave slots free: the
        // only recalls where community summaries are looked up and shown.
        for options in [
            (0, false, false, None),
            (paths, false, false, None),
            (paths, true, false, None),
            (paths, false, true, None),
            (paths, true, true, None),
            (paths, false, false, Some(0.9)),
            (paths, false, true, Some(0.9)),
        ] {
            let label = (self.name, profile.label);
            rows.push(
                time_recalls(
                    label,
                    options,
                    &memory,
                    self.actor,
                    &self.work.queries,
                    self.options,
                )
                .await?,
            );
        }
        Ok(())
    }
}

/// Times every query (after ten warm-up recalls, which also build HNSW graphs).
async fn time_recalls<S: GraphStore + SearchIndex>(
    (backend, label): (&'static str, &str),
    (path_limit, hypotheses, communities, min_score): (usize, bool, bool, Option<f64>),
    memory: &Memory<S>,
    actor: &Actor,
    queries: &[String],
    options: &GraphBenchOptions,
) -> Result<DiscoveryLatency, EvalError> {
    let ask = |text: &str| RecallQuery {
        path_limit,
        include_hypotheses: hypotheses,
        include_communities: communities,
        min_score,
        ..RecallQuery::text(text)
    };
    for query in queries.iter().take(10) {
        memory.recall(actor, ask(query)).await?;
    }
    let what = format!(
        "{backend} {label}, paths {path_limit}, hypotheses {hypotheses}, communities {communities}, floor {min_score:?}"
    );
    let progress = bar(options.progress, queries.len(), &what);
    let (mut latency, mut discovery, mut bytes) = (Vec::new(), Vec::new(), Vec::new());
    let (mut results, mut paths, mut related, mut summaries) = (0, 0, 0, 0);
    for query in queries {
        let started = Instant::now();
        let recall = memory.recall(actor, ask(query)).await?;
        latency.push(started.elapsed().as_secs_f64() * 1e3);
        discovery.push(recall.discovery.as_secs_f64() * 1e3);
        bytes.push(path_bytes(&recall.discovery_paths) as f64);
        results += recall.hits.len();
        paths += recall.discovery_paths.len();
        related += recall.related_hypotheses.as_ref().map_or(0, Vec::len);
        summaries += recall.community_summaries.as_ref().map_or(0, Vec::len);
        progress.inc(1);
    }
    progress.finish_and_clear();
    let n = queries.len().max(1) as f64;
    Ok(DiscoveryLatency {
        backend,
        profile: label.to_string(),
        path_limit,
        hypotheses,
        mean_hypotheses: related as f64 / n,
        communities,
        mean_communities: summaries as f64 / n,
        min_score,
        latency_ms: Spread::of(&latency),
        discovery_ms: Spread::of(&discovery),
        mean_results: results as f64 / n,
        mean_paths: paths as f64 / n,
        path_bytes: Spread::of(&bytes),
    })
}

/// A mean count when the option was asked, else `off`.
fn shown(asked: bool, mean: f64) -> String {
    if asked {
        format!("{mean:.1}")
    } else {
        "off".to_string()
    }
}

/// The bytes of the serialized paths (0 for none: the empty list is the baseline).
fn path_bytes(paths: &[DiscoveryPath]) -> usize {
    if paths.is_empty() {
        return 0;
    }
    serde_json::to_vec(paths).map_or(0, |b| b.len())
}

impl GraphBenchReport {
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "graph: seed {}, {} evidence, {} relationships over {} entities (largest degree {}), {} queries; vectors: {}",
            self.seed,
            self.evidence,
            self.relationships,
            self.entities,
            self.largest_degree,
            self.queries,
            self.vectors
        );
        for ingest in &self.ingest {
            let _ = writeln!(
                s,
                "  {} ingest (structured remember + embedding): {:.1}s",
                ingest.backend, ingest.secs
            );
        }
        for d in &self.dreams {
            let _ = writeln!(
                s,
                "  {} dream pass: {} relationships read, {} hypotheses proposed ({:.1} per 1,000), {:.1} ms",
                d.backend, d.relationships, d.proposed, d.per_thousand, d.millis
            );
        }
        for c in &self.communities {
            let _ = writeln!(
                s,
                "  {} community pass: {} relationships read, {} communities (largest {} entities), {:.1} ms",
                c.backend, c.relationships, c.communities, c.largest, c.millis
            );
        }
        let _ = writeln!(
            s,
            "  {:<9} {:<12} {:>5} {:>6} {:>5} {:>5} {:>9} {:>9} {:>9} {:>14} {:>7} {:>6} {:>16}",
            "backend",
            "profile",
            "floor",
            "paths",
            "hyp",
            "comm",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "discovery p50",
            "results",
            "paths",
            "path bytes p50/95"
        );
        for r in &self.rows {
            let _ = writeln!(
                s,
                "  {:<9} {:<12} {:>5} {:>6} {:>5} {:>5} {:>9.2} {:>9.2} {:>9.2} {:>14.2} {:>7.1} {:>6.2} {:>8.0}/{:<7.0}",
                r.backend,
                r.profile,
                r.min_score.map_or("-".to_string(), |f| format!("{f}")),
                r.path_limit,
                shown(r.hypotheses, r.mean_hypotheses),
                shown(r.communities, r.mean_communities),
                r.latency_ms.p50,
                r.latency_ms.p95,
                r.latency_ms.p99,
                r.discovery_ms.p50,
                r.mean_results,
                r.mean_paths,
                r.path_bytes.p50,
                r.path_bytes.p95
            );
        }
        s
    }
}
