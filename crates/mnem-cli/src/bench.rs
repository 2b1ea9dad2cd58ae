//! `mnem bench`: throughput and latency on real conversation turns (LongMemEval-S from
//! `../shared/data`), in-process, with medians. A measuring command, not a test.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use mnem_core::{Actor, NewEvidence, RecallQuery, SourceType, Timestamp};
use mnem_embed::Embedder;
use mnem_service::Memory;
use mnem_sqlite::SqliteStore;
use mnem_store::{EvidenceStore, SystemClock};
use serde_json::Value;

use crate::Failure;

pub struct BenchArgs {
    pub data: PathBuf,
    pub items: usize,
    pub queries: usize,
    pub embedder: Option<Arc<dyn Embedder>>,
}

struct Turn {
    text: String,
    observed_at: Timestamp,
    source: String,
}

/// A benchmark question and when it was asked (time hints are read against it).
type Question = (String, Timestamp);

fn runtime(err: impl std::fmt::Display) -> Failure {
    Failure::Runtime(err.to_string())
}

/// Distinct turns in haystack order (sessions shared between questions count once), then
/// the questions with their dates.
fn load(path: &Path, items: usize, queries: usize) -> Result<(Vec<Turn>, Vec<Question>), Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Input(format!("data: cannot read {}: {e}", path.display())))?;
    let instances: Vec<Value> = serde_json::from_str(&text).map_err(runtime)?;
    let date = |s: &str| -> Timestamp {
        // "2023/05/20 (Sat) 02:21"
        let day = s.get(..10).unwrap_or("").replace('/', "-");
        let time = s.get(s.len().saturating_sub(5)..).unwrap_or("00:00");
        Timestamp::parse("date", &format!("{day}T{time}:00Z")).unwrap_or(Timestamp::from_seconds(0))
    };
    let mut seen = std::collections::HashSet::new();
    let mut turns = Vec::new();
    let questions: Vec<Question> = instances
        .iter()
        .take(queries)
        .map(|instance| {
            let question = instance["question"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            (
                question,
                date(instance["question_date"].as_str().unwrap_or_default()),
            )
        })
        .collect();
    'outer: for instance in &instances {
        let sessions = instance["haystack_sessions"]
            .as_array()
            .into_iter()
            .flatten();
        let ids = instance["haystack_session_ids"]
            .as_array()
            .into_iter()
            .flatten();
        let dates = instance["haystack_dates"].as_array().into_iter().flatten();
        for ((session, id), day) in sessions.zip(ids).zip(dates) {
            let id = id.as_str().unwrap_or_default().to_string();
            if !seen.insert(id.clone()) {
                continue;
            }
            let base = date(day.as_str().unwrap_or_default());
            for (i, turn) in session.as_array().into_iter().flatten().enumerate() {
                let content = turn["content"].as_str().unwrap_or_default();
                if content.trim().is_empty()
                    || content.len() > mnem_core::evidence::MAX_CONTENT_BYTES
                {
                    continue;
                }
                turns.push(Turn {
                    text: content.to_string(),
                    observed_at: base.plus_seconds(i as i64),
                    source: format!("lme:{id}"),
                });
                if turns.len() == items {
                    break 'outer;
                }
            }
        }
    }
    Ok((turns, questions))
}

fn median_ms(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Median latency of recalling every question three times.
async fn recall_ms(
    memory: &Memory<SqliteStore>,
    actor: &Actor,
    questions: &[Question],
    label: &str,
) -> Result<(), Failure> {
    let mut samples = Vec::new();
    for _ in 0..3 {
        for (question, asked_at) in questions {
            let query = RecallQuery {
                request_time: Some(*asked_at),
                ..RecallQuery::text(question.clone())
            };
            let start = Instant::now();
            memory.recall(actor, query).await?;
            samples.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!(
        "recall, {label}: median {:.1} ms over {} recalls",
        median_ms(samples.clone()),
        samples.len()
    );
    Ok(())
}

pub async fn run(args: BenchArgs) -> Result<(), Failure> {
    let (turns, questions) = load(&args.data, args.items, args.queries)?;
    let dir = tempfile::tempdir().map_err(runtime)?;
    let path = dir.path().join("bench.db");
    let store = SqliteStore::open(&path, Arc::new(SystemClock))?;
    let actor = store.open_team("bench").await?;
    let memory = Memory::open(store.clone(), args.embedder.clone()).await?;
    let lexical_only = Memory::unchecked(store, None);
    println!(
        "corpus: {} LongMemEval-S turns, {} questions",
        turns.len(),
        questions.len()
    );

    let start = Instant::now();
    for (n, turn) in turns.iter().enumerate() {
        let mut new = NewEvidence::new(turn.text.clone());
        new.observed_at = Some(turn.observed_at);
        new.source = turn.source.clone();
        new.source_type = SourceType::Conversation;
        memory.remember(&actor, new).await?;
        if (n + 1) % 10_000 == 0 {
            eprintln!("  written {}", n + 1);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "write (commit, full-text indexed): {:.0} evidence/s ({:.1}s)",
        turns.len() as f64 / secs,
        secs
    );

    if let Some(embedder) = &args.embedder {
        let sample: Vec<&str> = turns.iter().take(64).map(|t| t.text.as_str()).collect();
        let start = Instant::now();
        for text in &sample {
            embedder.embed(&[text]).map_err(runtime)?;
        }
        let single = sample.len() as f64 / start.elapsed().as_secs_f64();
        let start = Instant::now();
        embedder.embed(&sample).map_err(runtime)?;
        let batched = sample.len() as f64 / start.elapsed().as_secs_f64();
        println!(
            "embedding, first {} turns: one at a time {single:.1}/s, one batch {batched:.1}/s",
            sample.len()
        );

        let start = Instant::now();
        let report = memory.embed_pending().await?;
        let secs = start.elapsed().as_secs_f64();
        println!(
            "embedding worker over the corpus: {:.1} evidence/s ({} in {secs:.1}s)",
            report.embedded as f64 / secs,
            report.embedded
        );

        let mut query_ms = Vec::new();
        for (question, _) in &questions {
            let start = Instant::now();
            embedder.embed(&[question]).map_err(runtime)?;
            query_ms.push(start.elapsed().as_secs_f64() * 1e3);
        }
        println!("query embedding: median {:.1} ms", median_ms(query_ms));
    }

    if args.embedder.is_some() {
        recall_ms(&memory, &actor, &questions, "hybrid, exact vector scan").await?;
        let ann_store = SqliteStore::open(&path, Arc::new(SystemClock))?.with_ann_threshold(0);
        let ann = Memory::open(ann_store, args.embedder.clone()).await?;
        let start = Instant::now();
        let question = questions
            .first()
            .map(|(q, _)| q.clone())
            .unwrap_or_default();
        ann.recall(&actor, RecallQuery::text(question)).await?;
        println!(
            "HNSW graph build on first vector query: {:.1}s",
            start.elapsed().as_secs_f64()
        );
        recall_ms(&ann, &actor, &questions, "hybrid, HNSW vector index").await?;
    }
    recall_ms(&lexical_only, &actor, &questions, "lexical only").await?;
    Ok(())
}
