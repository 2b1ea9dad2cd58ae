//! `mnem bench`: ingest throughput, recall latency percentiles, store size and peak
//! memory on a synthetic multi-team corpus, at several sizes, in one process.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnem_core::{Actor, NewEvidence, RecallQuery, DEFAULT_PROFILE, LEXICAL_PROFILE};
use mnem_embed::Embedder;
use mnem_postgres::{PgStore, VectorSearch};
use mnem_service::Memory;
use mnem_sqlite::SqliteStore;
use mnem_store::{GraphStore, SearchIndex, SystemClock};
use serde::Serialize;

use crate::hashing::HashingEmbedder;
use crate::report::Spread;
use crate::run::bar;
use crate::synthetic::{Corpus, Query};
use crate::EvalError;

pub struct BenchOptions {
    pub sizes: Vec<usize>,
    pub teams: usize,
    pub queries: usize,
    pub seed: u64,
    /// The real embedding model, to time query embedding with it (added to every hybrid
    /// recall in production); `None` skips that line.
    pub model: Option<Arc<dyn Embedder>>,
    pub progress: bool,
    /// Also measure PostgreSQL on this database, beside SQLite, size by size in the same
    /// run. Each size writes its own teams (`bench-<size>-<n>`), so an earlier size's
    /// rows stay in the tables as other tenants' data.
    pub database: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub seed: u64,
    pub teams: usize,
    pub queries: usize,
    pub vectors: &'static str,
    pub model_query_embedding_ms: Option<Spread>,
    pub sizes: Vec<SizeReport>,
    /// With `--database`: per size, both backends timed query by query in turn over the
    /// same corpus and queries ([`SideBySide`]).
    pub side_by_side: Vec<SideBySide>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SizeReport {
    pub backend: &'static str,
    pub items: usize,
    pub largest_team_items: usize,
    pub ingest_per_sec: f64,
    pub ingest_secs: f64,
    pub vectors_per_sec: f64,
    /// The SQLite file; for PostgreSQL, the database's size (other sizes' teams included).
    pub store_bytes: u64,
    /// Peak private resident memory while this size ran (Linux `RssAnon`, sampled every
    /// [`MEMORY_SAMPLE`]): the process's own memory. Not `VmHWM`: the store's pages are
    /// read through memory maps of the file, OS file cache that `VmHWM` counts once per
    /// read connection (at 1M, 25,495 MiB for a 3.9 GB store); the store's size is apart.
    pub peak_private_bytes: Option<u64>,
    pub recall_ms: Vec<ProfileLatency>,
    /// SQLite: building and saving every team's vector index in the first process that
    /// needs them. PostgreSQL: building the HNSW index over the table after the load
    /// (every size's rows so far).
    pub index_build_secs: Option<f64>,
    /// A fresh open of the store (as a new process makes, in this one: the page cache
    /// stays warm) to its first hybrid recall answered on the largest team: on SQLite it
    /// loads that team's saved index; on PostgreSQL it is a new connection pool.
    pub cold_start_ms: Option<f64>,
    /// SQLite: the saved vector indexes on disk.
    pub index_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProfileLatency {
    pub profile: String,
    /// The first timed pass over the queries, right after ingest (and, for the HNSW
    /// line, after the index is loaded): on a store larger than what stays cached, pages
    /// the queries need may still be read from disk.
    pub latency_ms: Spread,
    /// A second pass over as many fresh queries, right after the first: the same store
    /// with what the first pass read cached, as a server that has been answering for a
    /// while. New queries, not the first pass's again, so no answer is found by asking
    /// for what was just read.
    pub second_pass_ms: Spread,
    pub mean_results: f64,
}

/// One size's recall latency on both backends, timed in turns: each query (both passes'
/// queries) goes to SQLite and to PostgreSQL one after the other, the first backend
/// alternating query by query, so both meet the same moment of the machine. The
/// per-backend sections time one backend minutes after the other: on a shared 2-core
/// machine PostgreSQL's lexical p95 at 10k was 17.1 ms in one run and 7.0 in the next,
/// so their quotient says more about the machine than about the backends.
#[derive(Debug, Clone, Serialize)]
pub struct SideBySide {
    pub items: usize,
    pub profiles: Vec<PairedLatency>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PairedLatency {
    pub profile: String,
    pub sqlite_ms: Spread,
    pub postgres_ms: Spread,
}

pub async fn run(options: &BenchOptions) -> Result<BenchReport, EvalError> {
    let model_query_embedding_ms = match &options.model {
        Some(model) => Some(time_model_queries(model.as_ref(), options)?),
        None => None,
    };
    let postgres = match &options.database {
        Some(url) => Some(PgStore::connect(url, Arc::new(SystemClock), 4).await?),
        None => None,
    };
    let mut sizes = Vec::new();
    // Each size is also printed to stderr when it is done: a long run shows what it has
    // measured before it ends (stdout gets the whole report at the end).
    let done = |size: SizeReport| {
        eprint!("{}", size.section());
        size
    };
    let mut side_by_side = Vec::new();
    for &items in &options.sizes {
        let (report, sqlite) = run_size(items, options).await?;
        sizes.push(done(report));
        if let (Some(store), Some(url)) = (&postgres, &options.database) {
            let (report, postgres) = run_size_postgres(store.clone(), url, items, options).await?;
            sizes.push(done(report));
            let paired = time_side_by_side(items, &sqlite, &postgres, options).await?;
            eprint!("{}", paired.section());
            side_by_side.push(paired);
        }
    }
    Ok(BenchReport {
        seed: options.seed,
        teams: options.teams,
        queries: options.queries,
        vectors: "feature hashing (384 dims); see model_query_embedding_ms for the model",
        model_query_embedding_ms,
        sizes,
        side_by_side,
    })
}

fn time_model_queries(model: &dyn Embedder, options: &BenchOptions) -> Result<Spread, EvalError> {
    let mut corpus = Corpus::new(options.seed, options.teams);
    let mut samples = Vec::new();
    for _ in 0..options.queries.min(50) {
        let query = corpus.query();
        let started = Instant::now();
        model
            .embed(&[query.text.as_str()])
            .map_err(|e| EvalError::Bench(format!("model query embedding: {e}")))?;
        samples.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Spread::of(&samples))
}

/// What ingesting one size's corpus into a store produced.
struct Ingested {
    actors: Vec<Actor>,
    largest_team_items: usize,
    ingest_secs: f64,
    vectors_per_sec: f64,
    queries: Vec<Query>,
    /// As many again, drawn after `queries`: the second timed pass.
    fresh_queries: Vec<Query>,
}

impl Ingested {
    /// The first pass's queries, then the second's.
    fn both_passes(&self) -> impl Iterator<Item = &Query> {
        self.queries.iter().chain(&self.fresh_queries)
    }
}

/// Items per bulk-load transaction.
const INGEST_BATCH: usize = 1_000;

/// Writes the seeded corpus through the service (batches of a team's items), runs
/// `before_vectors` (once the embedding contract is active), embeds the corpus with the
/// hashing embedder, and draws the queries: the same for every backend.
async fn ingest<S, F, Fut>(
    store: &S,
    team_prefix: &str,
    items: usize,
    options: &BenchOptions,
    before_vectors: F,
) -> Result<Ingested, EvalError>
where
    S: GraphStore + SearchIndex + Clone,
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(), EvalError>>,
{
    let hashing: Arc<dyn Embedder> = Arc::new(HashingEmbedder::default());
    let memory = Memory::open(store.clone(), Some(hashing)).await?;
    let mut corpus = Corpus::new(options.seed, options.teams);
    let mut actors = Vec::new();
    for team in 0..corpus.teams() {
        actors.push(store.open_team(&format!("{team_prefix}{team}")).await?);
    }

    let progress = bar(options.progress, items, &format!("remember {items}"));
    let mut team_sizes = vec![0usize; actors.len()];
    let started = Instant::now();
    // Batched per team, as a bulk load or an import writes: one transaction per
    // `INGEST_BATCH` items of a team, the corpus's order kept within each team.
    let mut pending: Vec<Vec<NewEvidence>> = vec![Vec::new(); actors.len()];
    for n in 0..items {
        let document = corpus.document(n);
        team_sizes[document.team] += 1;
        let mut new = NewEvidence::new(document.text);
        new.observed_at = Some(document.observed_at);
        new.source = "bench".into();
        pending[document.team].push(new);
        if pending[document.team].len() == INGEST_BATCH {
            let batch = std::mem::take(&mut pending[document.team]);
            progress.inc(batch.len() as u64);
            memory.remember_batch(&actors[document.team], batch).await?;
        }
    }
    for (actor, batch) in actors.iter().zip(pending) {
        if !batch.is_empty() {
            progress.inc(batch.len() as u64);
            memory.remember_batch(actor, batch).await?;
        }
    }
    let ingest_secs = started.elapsed().as_secs_f64();
    progress.finish_and_clear();

    before_vectors().await?;
    let progress = bar(options.progress, items, "vectors");
    let started = Instant::now();
    let embedded = memory
        .embed_pending_reporting(|done| progress.set_position(done as u64))
        .await?
        .embedded;
    let vectors_per_sec = embedded as f64 / started.elapsed().as_secs_f64().max(1e-9);
    progress.finish_and_clear();
    Ok(Ingested {
        actors,
        largest_team_items: team_sizes.iter().copied().max().unwrap_or(0),
        ingest_secs,
        vectors_per_sec,
        queries: (0..options.queries).map(|_| corpus.query()).collect(),
        fresh_queries: (0..options.queries).map(|_| corpus.query()).collect(),
    })
}

/// Lexical and hybrid recall latency on `store` (its own vector search).
async fn time_profiles<S: GraphStore + SearchIndex + Clone>(
    store: &S,
    labels: [&str; 2],
    ingested: &Ingested,
    options: &BenchOptions,
) -> Result<Vec<ProfileLatency>, EvalError> {
    let hashing: Arc<dyn Embedder> = Arc::new(HashingEmbedder::default());
    let mut recall_ms = Vec::new();
    for (label, profile) in labels.into_iter().zip([LEXICAL_PROFILE, DEFAULT_PROFILE]) {
        let memory = Memory::open(store.clone(), Some(Arc::clone(&hashing)))
            .await?
            .with_profile(profile);
        recall_ms.push(time_recalls(label, &memory, ingested, options).await?);
    }
    Ok(recall_ms)
}

async fn run_size(
    items: usize,
    options: &BenchOptions,
) -> Result<(SizeReport, Kept<SqliteStore>), EvalError> {
    let memory_peak = PrivateMemoryPeak::start();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("bench.db");
    let store = SqliteStore::open(&path, Arc::new(SystemClock))?;
    let hashing: Arc<dyn Embedder> = Arc::new(HashingEmbedder::default());
    let ingested = ingest(&store, "bench-", items, options, || async { Ok(()) }).await?;
    let store_bytes = directory_bytes(dir.path())?;
    let mut recall_ms = time_profiles(
        &store,
        ["lexical", "hybrid, exact vectors"],
        &ingested,
        options,
    )
    .await?;
    let actors = &ingested.actors;
    // The first process to need the vector indexes builds and saves them: timed apart.
    let started = Instant::now();
    SqliteStore::open(&path, Arc::new(SystemClock))?
        .with_ann_threshold(0)
        .warm_ann()
        .await?;
    let index_build_secs = started.elapsed().as_secs_f64();
    let index_bytes = directory_bytes(&mnem_sqlite::vector_index_dir(&path))?;

    // As a new process would: open, then the largest team's first hybrid recall (team 0
    // is the largest: sizes fall with rank), which loads that team's saved index.
    let started = Instant::now();
    let ann_store = SqliteStore::open(&path, Arc::new(SystemClock))?.with_ann_threshold(0);
    let ann = Memory::open(ann_store.clone(), Some(hashing))
        .await?
        .with_profile(DEFAULT_PROFILE);
    ann.recall(
        &actors[0],
        RecallQuery::text(ingested.queries[0].text.clone()),
    )
    .await?;
    let cold_start_ms = started.elapsed().as_secs_f64() * 1e3;
    for actor in actors {
        ann.recall(actor, RecallQuery::text("load the index"))
            .await?;
    }
    recall_ms.push(time_recalls("hybrid, HNSW vectors", &ann, &ingested, options).await?);

    let report = SizeReport {
        backend: "sqlite",
        items,
        largest_team_items: ingested.largest_team_items,
        ingest_per_sec: items as f64 / ingested.ingest_secs.max(1e-9),
        ingest_secs: ingested.ingest_secs,
        vectors_per_sec: ingested.vectors_per_sec,
        store_bytes,
        peak_private_bytes: memory_peak.finish(),
        recall_ms,
        index_build_secs: Some(index_build_secs),
        cold_start_ms: Some(cold_start_ms),
        index_bytes: Some(index_bytes),
    };
    let kept = Kept {
        lexical: store,
        hybrid: ann_store,
        ingested,
        _dir: Some(dir),
    };
    Ok((report, kept))
}

/// `maintenance_work_mem` for pgvector's HNSW build: room for 1M 384-dimension vectors
/// and their graph, so the build stays in memory.
const PG_INDEX_BUILD_MEMORY: &str = "3GB";

/// The same size on PostgreSQL, loaded as an operator loads in bulk: the HNSW indexes
/// dropped before the load and built once after it (timed: `index_build_secs`, which
/// includes earlier sizes' rows), and statistics refreshed (as autovacuum would, a minute
/// later).
async fn run_size_postgres(
    store: PgStore,
    url: &str,
    items: usize,
    options: &BenchOptions,
) -> Result<(SizeReport, Kept<PgStore>), EvalError> {
    // As an operator loads in bulk: the HNSW indexes go before the vectors are written
    // and are built once after (pgvector extends one row by row at ~2 ms a vector).
    let dims = HashingEmbedder::default().contract().dims;
    let prefix = format!("bench-{items}-");
    let drop_indexes = || async { Ok(store.drop_vector_indexes(dims).await?) };
    let ingested = ingest(&store, &prefix, items, options, drop_indexes).await?;
    let started = Instant::now();
    store
        .build_vector_indexes(dims, PG_INDEX_BUILD_MEMORY)
        .await?;
    let index_build_secs = started.elapsed().as_secs_f64();
    store.analyze().await?;
    // As a new server process would: a fresh pool, then the largest team's first hybrid
    // recall.
    let started = Instant::now();
    let fresh = PgStore::connect(url, Arc::new(SystemClock), 4).await?;
    Memory::open(fresh, Some(Arc::new(HashingEmbedder::default())))
        .await?
        .with_profile(DEFAULT_PROFILE)
        .recall(
            &ingested.actors[0],
            RecallQuery::text(ingested.queries[0].text.clone()),
        )
        .await?;
    let cold_start_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut recall_ms = time_profiles(
        &store,
        ["lexical", "hybrid, HNSW vectors"],
        &ingested,
        options,
    )
    .await?;
    let exact = store.clone().with_vector_search(VectorSearch::Exact);
    let memory = Memory::open(exact, Some(Arc::new(HashingEmbedder::default())))
        .await?
        .with_profile(DEFAULT_PROFILE);
    recall_ms.push(time_recalls("hybrid, exact vectors", &memory, &ingested, options).await?);
    let report = SizeReport {
        backend: "postgres",
        items,
        largest_team_items: ingested.largest_team_items,
        ingest_per_sec: items as f64 / ingested.ingest_secs.max(1e-9),
        ingest_secs: ingested.ingest_secs,
        vectors_per_sec: ingested.vectors_per_sec,
        store_bytes: store.database_bytes().await?,
        peak_private_bytes: None,
        recall_ms,
        index_build_secs: Some(index_build_secs),
        cold_start_ms: Some(cold_start_ms),
        index_bytes: None,
    };
    let kept = Kept {
        lexical: store.clone(),
        hybrid: store,
        ingested,
        _dir: None,
    };
    Ok((report, kept))
}

/// A backend's store kept open after its own section, for [`time_side_by_side`]: as each
/// timed profile reads it, with the corpus's teams and queries and (SQLite) the
/// directory the file lives in.
struct Kept<S> {
    lexical: S,
    /// With the vector index for every team (`hybrid, HNSW vectors`).
    hybrid: S,
    ingested: Ingested,
    _dir: Option<tempfile::TempDir>,
}

/// Lexical and HNSW hybrid recall on both backends in turns ([`SideBySide`]). Both
/// ingested the same seeded corpus, so the queries and their teams are the same.
async fn time_side_by_side(
    items: usize,
    sqlite: &Kept<SqliteStore>,
    postgres: &Kept<PgStore>,
    options: &BenchOptions,
) -> Result<SideBySide, EvalError> {
    let queries: Vec<&Query> = sqlite.ingested.both_passes().collect();
    if !queries.iter().copied().eq(postgres.ingested.both_passes()) {
        return Err(EvalError::Bench(
            "side by side: the backends drew different queries from the same seed".into(),
        ));
    }
    let hashing: Arc<dyn Embedder> = Arc::new(HashingEmbedder::default());
    let mut profiles = Vec::new();
    for (label, profile, sqlite_store, postgres_store) in [
        (
            "lexical",
            LEXICAL_PROFILE,
            &sqlite.lexical,
            &postgres.lexical,
        ),
        (
            "hybrid, HNSW vectors",
            DEFAULT_PROFILE,
            &sqlite.hybrid,
            &postgres.hybrid,
        ),
    ] {
        let on_sqlite = Memory::open(sqlite_store.clone(), Some(Arc::clone(&hashing)))
            .await?
            .with_profile(profile.clone());
        let on_postgres = Memory::open(postgres_store.clone(), Some(Arc::clone(&hashing)))
            .await?
            .with_profile(profile);
        let progress = bar(
            options.progress,
            queries.len(),
            &format!("{label}, side by side"),
        );
        let mut samples = [Vec::new(), Vec::new()];
        for (n, query) in queries.iter().enumerate() {
            // Alternate which backend goes first, so neither always follows the other.
            for turn in [n % 2, 1 - n % 2] {
                let (ms, _) = if turn == 0 {
                    timed_recall(&on_sqlite, &sqlite.ingested, query).await?
                } else {
                    timed_recall(&on_postgres, &postgres.ingested, query).await?
                };
                samples[turn].push(ms);
            }
            progress.inc(1);
        }
        progress.finish_and_clear();
        profiles.push(PairedLatency {
            profile: label.to_string(),
            sqlite_ms: Spread::of(&samples[0]),
            postgres_ms: Spread::of(&samples[1]),
        });
    }
    Ok(SideBySide { items, profiles })
}

/// One recall of `query` by its team's actor: milliseconds taken and results returned.
async fn timed_recall<S: GraphStore + SearchIndex>(
    memory: &Memory<S>,
    ingested: &Ingested,
    query: &Query,
) -> Result<(f64, usize), EvalError> {
    let started = Instant::now();
    let answer = memory
        .recall(
            &ingested.actors[query.team],
            RecallQuery::text(query.text.clone()),
        )
        .await?;
    Ok((started.elapsed().as_secs_f64() * 1e3, answer.hits.len()))
}

/// Times one profile: a pass over the queries, then one over the fresh queries
/// ([`ProfileLatency`]).
async fn time_recalls<S: GraphStore + SearchIndex>(
    label: &str,
    memory: &Memory<S>,
    ingested: &Ingested,
    options: &BenchOptions,
) -> Result<ProfileLatency, EvalError> {
    // Warm the statement cache (and the first pages) before timing.
    for query in ingested.queries.iter().take(10) {
        timed_recall(memory, ingested, query).await?;
    }
    let total = ingested.queries.len() + ingested.fresh_queries.len();
    let progress = bar(options.progress, total, label);
    let mut results = 0;
    let mut samples = [Vec::new(), Vec::new()];
    for (queries, samples) in [&ingested.queries, &ingested.fresh_queries]
        .into_iter()
        .zip(&mut samples)
    {
        for query in queries {
            let (ms, returned) = timed_recall(memory, ingested, query).await?;
            samples.push(ms);
            results += returned;
            progress.inc(1);
        }
    }
    let [first, second] = samples;
    let (latency_ms, second_pass_ms) = (Spread::of(&first), Spread::of(&second));
    progress.finish_and_clear();
    Ok(ProfileLatency {
        profile: label.to_string(),
        latency_ms,
        second_pass_ms,
        mean_results: results as f64 / total.max(1) as f64,
    })
}

/// Bytes of the files directly in `dir`.
fn directory_bytes(dir: &Path) -> Result<u64, EvalError> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        total += entry?.metadata()?.len();
    }
    Ok(total)
}

/// How often [`PrivateMemoryPeak`] reads the process's private memory.
const MEMORY_SAMPLE: Duration = Duration::from_millis(100);

/// The highest private resident memory (`RssAnon`) seen while it runs, read from
/// `/proc/self/status` every [`MEMORY_SAMPLE`] by a thread of its own.
struct PrivateMemoryPeak {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    sampler: Option<std::thread::JoinHandle<()>>,
}

impl PrivateMemoryPeak {
    fn start() -> Self {
        let peak = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = private_resident_bytes().is_some().then(|| {
            let (peak, stop) = (Arc::clone(&peak), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(bytes) = private_resident_bytes() {
                        peak.fetch_max(bytes, Ordering::Relaxed);
                    }
                    std::thread::sleep(MEMORY_SAMPLE);
                }
            })
        });
        Self {
            peak,
            stop,
            sampler,
        }
    }

    /// The peak, with a last reading; `None` off Linux.
    fn finish(mut self) -> Option<u64> {
        let sampler = self.sampler.take()?;
        self.stop.store(true, Ordering::Relaxed);
        let _ = sampler.join();
        let last = private_resident_bytes().unwrap_or(0);
        Some(self.peak.load(Ordering::Relaxed).max(last))
    }
}

impl Drop for PrivateMemoryPeak {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Private resident memory from `/proc/self/status` (`None` off Linux).
fn private_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl BenchReport {
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "synthetic corpus: seed {}, {} teams (sizes ∝ 1/rank), {} queries; vectors: {}",
            self.seed, self.teams, self.queries, self.vectors
        );
        if let Some(model) = &self.model_query_embedding_ms {
            let _ = writeln!(
                s,
                "built-in model query embedding: p50 {:.1} ms, p95 {:.1} ms (add to hybrid recall)",
                model.p50, model.p95
            );
        }
        for size in &self.sizes {
            s.push_str(&size.section());
        }
        for paired in &self.side_by_side {
            s.push_str(&paired.section());
        }
        s
    }
}

impl SideBySide {
    /// This size's side-by-side lines of [`BenchReport::table`].
    pub fn section(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\n[side by side] N = {}: both passes' queries, each to SQLite and PostgreSQL in turn (first backend alternating)",
            self.items
        );
        let _ = writeln!(
            s,
            "  {:<24} {:>23}   {:>23}   {:>17}",
            "recall ms", "sqlite p50 / p95 / p99", "postgres p50 / p95 / p99", "ratio p50 / p95"
        );
        for p in &self.profiles {
            let (a, b) = (&p.sqlite_ms, &p.postgres_ms);
            let ratio = |x: f64, y: f64| if x > 0.0 { y / x } else { f64::NAN };
            let _ = writeln!(
                s,
                "  {:<24} {:>7.2} {:>7.2} {:>7.2}   {:>7.2} {:>7.2} {:>7.2}   {:>7.1}× {:>7.1}×",
                p.profile,
                a.p50,
                a.p95,
                a.p99,
                b.p50,
                b.p95,
                b.p99,
                ratio(a.p50, b.p50),
                ratio(a.p95, b.p95)
            );
        }
        s
    }
}

impl SizeReport {
    /// This size's part of [`BenchReport::table`].
    pub fn section(&self) -> String {
        use std::fmt::Write;
        let size = self;
        let mut s = String::new();
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let _ = writeln!(
            s,
            "\n[{}] N = {} (largest team {}): ingest {:.0}/s ({:.1}s), vectors {:.0}/s, store {:.1} MiB, peak private memory {}",
            size.backend,
            size.items,
            size.largest_team_items,
            size.ingest_per_sec,
            size.ingest_secs,
            size.vectors_per_sec,
            mib(size.store_bytes),
            size.peak_private_bytes
                .map_or("n/a".into(), |b| format!("{:.0} MiB", mib(b)))
        );
        match (size.index_build_secs, size.cold_start_ms, size.index_bytes) {
            (Some(build), Some(cold), Some(bytes)) => {
                let _ = writeln!(
                    s,
                    "  vector index build + save (all teams, once): {build:.1}s, saved {:.1} MiB; \
                     cold start (open → first hybrid recall, largest team): {cold:.0} ms",
                    mib(bytes)
                );
            }
            (Some(build), Some(cold), None) => {
                let _ = writeln!(
                    s,
                    "  HNSW index build after the load (every size's rows): {build:.1}s; \
                     cold start (connect → first hybrid recall, largest team): {cold:.0} ms"
                );
            }
            _ => {}
        }
        let _ = writeln!(
            s,
            "  {:<24} {:>9} {:>9} {:>9} {:>8}   second pass, fresh queries: {:>7} {:>7} {:>7}",
            "recall ms", "p50", "p95", "p99", "results", "p50", "p95", "p99"
        );
        for p in &size.recall_ms {
            let (first, second) = (&p.latency_ms, &p.second_pass_ms);
            let _ = writeln!(
                s,
                "  {:<24} {:>9.2} {:>9.2} {:>9.2} {:>8.1}   {:>35.2} {:>7.2} {:>7.2}",
                p.profile,
                first.p50,
                first.p95,
                first.p99,
                p.mean_results,
                second.p50,
                second.p95,
                second.p99
            );
        }
        s
    }
}
