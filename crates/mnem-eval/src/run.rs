//! Ingest a dataset into a fresh store, then recall every question under each ranking
//! profile, recording ranks, bytes and latency.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use mnem_core::recall::{
    DEFAULT_CONTEXT_BYTES, DEFAULT_LIMIT, DEFAULT_WINDOW, MAX_CONTEXT_BYTES, MAX_QUERY_CHARS,
};
use mnem_core::{
    parse_profile, Actor, Evidence, EvidenceId, LifecycleState, RankingProfile, RecallHit,
    RecallQuery,
};
use mnem_embed::Embedder;
use mnem_postgres::PgStore;
use mnem_service::{Memory, Recall};
use mnem_sqlite::SqliteStore;
use mnem_store::{GraphStore, SearchIndex, SystemClock};

use crate::cache::CachingEmbedder;
use crate::contextual::ContextualEmbedder;
use crate::dataset::{Dataset, Item, QuestionClass};
use crate::fit::{self, FitQuestion, FitReport};
use crate::metrics::{dedup_in_order, gold_ranks, gold_result_ranks};
use crate::report::{BudgetResult, EvalReport, IngestReport, ProfileReport, QuestionResult};
use crate::EvalError;

/// Results deep enough to rank gold turns and sessions for @10 and MRR.
pub(crate) const DEEP_LIMIT: usize = 50;

/// The byte budgets an agent-facing recall is measured under by default: a tight one
/// and the product's default.
pub const AGENT_BUDGETS: [usize; 2] = [2_000, DEFAULT_CONTEXT_BYTES];

pub struct EvalOptions {
    pub profiles: Vec<RankingProfile>,
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Document vectors are read from and written to this cache (same contract only);
    /// query embedding never uses it.
    pub embed_cache: Option<PathBuf>,
    /// The agent-facing recall: result limit, and the byte budgets it is asked under
    /// (each question once per budget; gold turns count only when returned).
    pub limit: usize,
    pub context_bytes: Vec<usize>,
    /// Evidence windows to compare: every profile runs once per window.
    pub windows: Vec<usize>,
    /// One JSON line per question and profile, for error analysis.
    pub out: Option<PathBuf>,
    pub progress: bool,
    /// Run on this (empty) PostgreSQL database instead of a temporary SQLite file.
    pub database: Option<String>,
    /// Fit the first profile's constants to this file's scored questions
    /// ([`crate::fit`]), write the fitted spec here, and measure it after the others.
    pub fit: Option<PathBuf>,
    /// Fit a reranker's weights for these features (all when empty) on top of the first
    /// profile instead of its constants ([`crate::fit::fit_reranker`]), written to `fit`
    /// the same way.
    pub fit_reranker: Option<Vec<String>>,
    /// Embed each turn with the turn before it in its session
    /// ([`crate::contextual`]): a measurement, not a product mode.
    pub contextual_vectors: bool,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            profiles: vec![mnem_core::DEFAULT_PROFILE],
            embedder: None,
            embed_cache: None,
            limit: DEFAULT_LIMIT,
            context_bytes: AGENT_BUDGETS.to_vec(),
            windows: vec![DEFAULT_WINDOW],
            out: None,
            progress: false,
            database: None,
            fit: None,
            fit_reranker: None,
            contextual_vectors: false,
        }
    }
}

pub(crate) fn bar(enabled: bool, len: usize, what: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len} {per_sec} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

/// Where each evidence id came from: (haystack, item index).
type Origins = HashMap<EvidenceId, (usize, usize)>;

pub async fn run(dataset: &Dataset, options: &EvalOptions) -> Result<EvalReport, EvalError> {
    // Opened first: a bad path fails now, not after a quarter-hour ingest.
    let out = match &options.out {
        Some(path) => Some(std::io::BufWriter::new(std::fs::File::create(path)?)),
        None => None,
    };
    match &options.database {
        Some(url) => {
            let store = PgStore::connect(url, Arc::new(SystemClock), 4).await?;
            run_on(store, dataset, options, out).await
        }
        None => {
            let dir = tempfile::tempdir()?;
            let store = SqliteStore::open(&dir.path().join("eval.db"), Arc::new(SystemClock))?;
            run_on(store, dataset, options, out).await
        }
    }
}

/// The evaluation on one backend's store: both backends are measured by the same code.
async fn run_on<S: GraphStore + SearchIndex + Clone>(
    store: S,
    dataset: &Dataset,
    options: &EvalOptions,
    mut out: Option<std::io::BufWriter<std::fs::File>>,
) -> Result<EvalReport, EvalError> {
    let ingest_embedder = match (&options.embedder, &options.embed_cache) {
        (Some(embedder), Some(path)) => {
            Some(Arc::new(CachingEmbedder::open(path, Arc::clone(embedder))?) as Arc<dyn Embedder>)
        }
        (embedder, _) => embedder.clone(),
    };
    // Outside the cache, so the cache keys the text actually embedded.
    let ingest_embedder = match ingest_embedder {
        Some(embedder) if options.contextual_vectors => {
            Some(Arc::new(ContextualEmbedder::new(embedder, dataset)) as Arc<dyn Embedder>)
        }
        other => other,
    };
    let writer = Memory::open(store.clone(), ingest_embedder).await?;

    let (actors, origins, ingest) = ingest(dataset, &writer, options).await?;

    let mut measured = options.profiles.clone();
    let fit = match (&options.fit, options.profiles.first()) {
        (Some(path), Some(start)) => {
            let report = fit_profile(dataset, &writer, &actors, &origins, start, options).await?;
            std::fs::write(path, format!("{}\n", report.fitted))?;
            measured
                .push(parse_profile(&report.fitted).map_err(|e| EvalError::Fit(e.to_string()))?);
            Some(report)
        }
        _ => None,
    };

    let mut profiles = Vec::new();
    for profile in &measured {
        let memory = Memory::open(store.clone(), options.embedder.clone())
            .await?
            .with_profile(profile.clone());
        for &window in &options.windows {
            let results = ask(dataset, &memory, &actors, &origins, options, window).await?;
            if let Some(out) = out.as_mut() {
                for result in &results {
                    serde_json::to_writer(&mut *out, result).map_err(std::io::Error::from)?;
                    out.write_all(b"\n")?;
                }
            }
            profiles.push(ProfileReport::summarise(
                &profile.version,
                window,
                &options.context_bytes,
                &results,
            ));
        }
    }
    if let Some(mut out) = out {
        out.flush()?;
    }
    Ok(EvalReport {
        dataset: dataset.name,
        embedder: options
            .embedder
            .as_ref()
            .map(|e| e.contract().key())
            .unwrap_or_else(|| "none".into()),
        limit: options.limit,
        context_bytes: options.context_bytes.clone(),
        ingest,
        profiles,
        fit,
    })
}

/// Reads every scored question's candidates once under `start`, then fits
/// ([`crate::fit::fit`]).
async fn fit_profile<S: GraphStore + SearchIndex + Clone>(
    dataset: &Dataset,
    writer: &Memory<S>,
    actors: &[Actor],
    origins: &Origins,
    start: &RankingProfile,
    options: &EvalOptions,
) -> Result<FitReport, EvalError> {
    let memory = Memory::open(writer.store().clone(), options.embedder.clone())
        .await?
        .with_profile(start.clone());
    let evidence_of: HashMap<(usize, &str), EvidenceId> = origins
        .iter()
        .map(|(id, &(h, i))| ((h, dataset.haystacks[h].items[i].id.as_str()), *id))
        .collect();
    let progress = bar(options.progress, dataset.questions.len(), "fit: read");
    let mut questions = Vec::new();
    for question in &dataset.questions {
        progress.inc(1);
        let gold: HashSet<EvidenceId> = question
            .gold_items
            .iter()
            .filter_map(|item| evidence_of.get(&(question.haystack, item.as_str())))
            .copied()
            .collect();
        if question.class != QuestionClass::Scored || gold.is_empty() {
            continue;
        }
        let actor = actors[question.haystack];
        let text: String = question.text.chars().take(MAX_QUERY_CHARS).collect();
        let query = RecallQuery {
            request_time: Some(question.asked_at),
            limit: DEEP_LIMIT,
            context_bytes: MAX_CONTEXT_BYTES,
            window: 0,
            ..RecallQuery::text(text)
        };
        let (plan, branches) = memory.candidates(&actor, query).await?;
        // Any candidate can lead under some trial profile: its followers are read once,
        // two deep for credit through a follow-up question.
        let mut pool: Vec<Evidence> = Vec::new();
        let mut seen = HashSet::new();
        for candidate in branches.iter().flat_map(|b| &b.candidates) {
            if candidate.evidence.source_key.is_some() && seen.insert(candidate.evidence.id) {
                pool.push(candidate.evidence.clone());
            }
        }
        // Any candidate can lead the entity hop too: what the query and every candidate
        // mention is read once, and the items it brings in can lead follow-on credit.
        let mut keys: Vec<String> = mnem_core::mention::mentions(&plan.query.query);
        for candidate in branches.iter().flat_map(|b| &b.candidates) {
            keys.extend(mnem_core::mention::mentions(&candidate.evidence.content));
        }
        keys.sort_unstable();
        keys.dedup();
        let known: HashSet<EvidenceId> = branches
            .iter()
            .flat_map(|b| &b.candidates)
            .map(|c| c.evidence.id)
            .collect();
        let mentions = memory.read_mentions(&actor, &plan, keys, known).await?;
        pool.extend(
            mentions
                .records
                .values()
                .filter(|e| e.source_key.is_some())
                .cloned(),
        );
        let followers = memory.group_neighbours(&actor, &plan, pool, 2).await?;
        questions.push(FitQuestion {
            actor,
            plan,
            branches,
            mentions,
            followers,
            gold,
        });
    }
    progress.finish_and_clear();
    tracing::info!(questions = questions.len(), start = %start.version, "fitting");
    if let Some(features) = &options.fit_reranker {
        return fit::fit_reranker(&questions, &start.version, features);
    }
    fit::fit(&questions, &start.version, |spec, mrr| {
        tracing::info!(mrr = format!("{mrr:.4}"), %spec, "fit: kept a move");
    })
}

/// The rarity the eval's mention report reads at: the widest cut-off measured for the
/// entity hop (ARCHITECTURE "Ranking signals tried").
const MENTION_CUT_OFF: usize = 10;

async fn ingest<S: GraphStore + SearchIndex>(
    dataset: &Dataset,
    memory: &Memory<S>,
    options: &EvalOptions,
) -> Result<(Vec<Actor>, Origins, IngestReport), EvalError> {
    let total: usize = dataset.haystacks.iter().map(|h| h.items.len()).sum();
    let progress = bar(options.progress, total, "remember");
    let started = Instant::now();
    let mut actors = Vec::new();
    let mut origins = Origins::new();
    let mut held: HashSet<(usize, &str)> = HashSet::new();
    let mut deduplicated = 0;
    for (h, haystack) in dataset.haystacks.iter().enumerate() {
        let actor = memory.store().open_team(&haystack.team).await?;
        for (i, item) in haystack.items.iter().enumerate() {
            let stored = match memory.remember(&actor, item.evidence(dataset.name)).await {
                Ok(stored) => stored,
                // A turn no write accepts (a NUL in its text, say) is what an import would
                // report and skip: said, and left out, rather than ending the run.
                Err(mnem_service::ServiceError::Store(mnem_store::StoreError::Invalid(err))) => {
                    eprintln!("{}: turn {} refused: {err}", dataset.name, item.id);
                    progress.inc(1);
                    continue;
                }
                Err(err) => return Err(err.into()),
            };
            if stored.evidence.state == LifecycleState::Quarantined {
                held.insert((h, item.id.as_str()));
            }
            if stored.duplicate.is_some() {
                // A turn replayed at the same place of its session: one item stands for
                // both, and is credited to the first.
                deduplicated += 1;
                progress.inc(1);
                continue;
            }
            origins.insert(stored.evidence.id, (h, i));
            progress.inc(1);
        }
        actors.push(actor);
    }
    let write_secs = started.elapsed().as_secs_f64();
    progress.finish_and_clear();
    let gold_held: HashSet<(usize, &str)> = dataset
        .questions
        .iter()
        .filter(|q| q.class == QuestionClass::Scored)
        .flat_map(|q| q.gold_items.iter().map(move |id| (q.haystack, id.as_str())))
        .filter(|turn| held.contains(turn))
        .collect();

    let progress = bar(
        options.progress && options.embedder.is_some(),
        total,
        "embed",
    );
    let started = Instant::now();
    let report = memory
        .embed_pending_reporting(|done| progress.set_position(done as u64))
        .await?;
    let embed_secs = started.elapsed().as_secs_f64();
    progress.finish_and_clear();
    Ok((
        actors,
        origins,
        IngestReport {
            items: total,
            teams: dataset.haystacks.len(),
            write_secs,
            writes_per_sec: total as f64 / write_secs.max(1e-9),
            embedded: report.embedded,
            embed_secs,
            embeds_per_sec: report.embedded as f64 / embed_secs.max(1e-9),
            quarantined: held.len(),
            gold_quarantined: gold_held.len(),
            deduplicated,
            mentions: crate::mentions::report(dataset, MENTION_CUT_OFF),
        },
    ))
}

async fn ask<S: GraphStore + SearchIndex>(
    dataset: &Dataset,
    memory: &Memory<S>,
    actors: &[Actor],
    origins: &Origins,
    options: &EvalOptions,
    window: usize,
) -> Result<Vec<QuestionResult>, EvalError> {
    let version = memory.profile().version.to_string();
    let progress = bar(
        options.progress,
        dataset.questions.len(),
        &format!("{version} w{window}"),
    );
    let mut results = Vec::new();
    for question in &dataset.questions {
        let actor = &actors[question.haystack];
        let haystack = &dataset.haystacks[question.haystack];
        // A benchmark question longer than a query may be is cut, not failed: one
        // outlier must not end a quarter-hour run.
        let text: String = question.text.chars().take(MAX_QUERY_CHARS).collect();
        let query = |limit, context_bytes, window| RecallQuery {
            request_time: Some(question.asked_at),
            limit,
            context_bytes,
            window,
            ..RecallQuery::text(text.clone())
        };
        // Ranks are measured on one deep list of single items, whatever the window.
        let deep = memory
            .recall(actor, query(DEEP_LIMIT, MAX_CONTEXT_BYTES, 0))
            .await?;
        let origin = |id: &EvidenceId| {
            origins
                .get(id)
                .filter(|(h, _)| *h == question.haystack)
                .map(|&(_, i)| haystack.items[i].id.as_str())
        };
        let deep_turns: Vec<&Item> = deep
            .hits
            .iter()
            .filter_map(|hit| origins.get(&hit.evidence.id))
            .filter(|(h, _)| *h == question.haystack)
            .map(|&(_, i)| &haystack.items[i])
            .collect();
        let deep_items = ids(&deep_turns);
        let deep_groups = dedup_in_order(deep_turns.iter().map(|t| t.group.as_str()));
        let leaks = |recall: &Recall| {
            recall
                .hits
                .iter()
                .flat_map(|hit| {
                    std::iter::once(&hit.evidence).chain(hit.window_items().map(|i| &i.evidence))
                })
                .filter(|evidence| evidence.team != actor.team)
                .count()
        };
        let mut leaked = leaks(&deep);
        let mut budgets = Vec::new();
        let mut top_score = None;
        for &context_bytes in &options.context_bytes {
            let started = Instant::now();
            let agent = memory
                .recall(actor, query(options.limit, context_bytes, window))
                .await?;
            let latency = started.elapsed();
            leaked += leaks(&agent);
            top_score = top_score.or(agent.hits.first().map(|hit| hit.score.value()));
            // Each result's benchmark turns: the hit and its window.
            let returned: Vec<Vec<&str>> = agent
                .hits
                .iter()
                .map(|hit| {
                    std::iter::once(&hit.evidence.id)
                        .chain(hit.window_items().map(|item| &item.evidence.id))
                        .filter_map(origin)
                        .collect()
                })
                .collect();
            let answer_kept = question.quoted_answer.as_deref().map(|answer| {
                agent.hits.iter().any(|hit| {
                    std::iter::once(&hit.context)
                        .chain(hit.window_items().map(|item| &item.context))
                        .any(|context| context.to_lowercase().contains(answer))
                })
            });
            budgets.push(BudgetResult {
                context_bytes,
                item_ranks: gold_result_ranks(&returned, &question.gold_items),
                answer_kept,
                returned: agent.hits.len(),
                bytes: agent.hits.iter().map(RecallHit::bytes).sum(),
                latency_ms: millis(latency),
                query_embedding_ms: millis(agent.query_embedding),
                windows_ms: millis(agent.windows),
            });
        }
        results.push(QuestionResult {
            profile: version.clone(),
            window,
            question_id: question.id.clone(),
            category: question.category.clone(),
            class: question.class,
            gold_items: question.gold_items.len(),
            gold_groups: question.gold_groups.len(),
            item_ranks: gold_ranks(&deep_items, &question.gold_items),
            group_ranks: gold_ranks(&deep_groups, &question.gold_groups),
            top_items: deep_items
                .iter()
                .take(10)
                .map(|id| id.to_string())
                .collect(),
            budgets,
            top_score,
            leaks: leaked,
        });
        progress.inc(1);
    }
    progress.finish_and_clear();
    Ok(results)
}

fn ids<'a>(turns: &[&'a Item]) -> Vec<&'a str> {
    turns.iter().map(|turn| turn.id.as_str()).collect()
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}
