//! Which HNSW metric and quantisation the vector index uses, measured on real vectors:
//! each kind is built over the same vectors with the index's own degree and beams, then
//! every query is searched under every kind in turn (alternating, so machine noise falls
//! on all alike), and each kind's proposals are checked against the exact top 100.
//!
//! ```sh
//! mnem eval longmemeval longmemeval_s_dev.json --embed-cache /tmp/lme.vec --profile vector
//! cargo run --release -p mnem-sqlite --example ann_kinds -- /tmp/lme.vec 37000
//! ```
//! The first argument is an `--embed-cache` file (any model's vectors of one width), the
//! second how many of its vectors to index; every 97th vector is a query.

use std::collections::HashSet;
use std::time::Instant;

use mnem_core::lexical::topk::presumed_pool;
use rusqlite::Connection;
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

const KINDS: [(&str, MetricKind, ScalarKind); 4] = [
    ("cosine bf16", MetricKind::Cos, ScalarKind::BF16),
    ("inner bf16", MetricKind::IP, ScalarKind::BF16),
    ("inner f32", MetricKind::IP, ScalarKind::F32),
    ("inner i8", MetricKind::IP, ScalarKind::I8),
];
/// The recall pool every branch fills: its proposals were asked twice over, and now
/// [`presumed_pool`] of them.
const POOL: usize = 100;
const ROUNDS: usize = 3;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: ann_kinds <embed-cache file> [vectors]")?;
    let wanted: usize = args.next().map_or(Ok(37_000), |n| n.parse())?;
    let mut vectors = read_vectors(&path)?;
    let queries: Vec<Vec<f32>> = vectors.iter().step_by(97).take(600).cloned().collect();
    vectors.truncate(wanted);
    let dimensions = vectors.first().ok_or("no vectors in the cache")?.len();
    vectors.retain(|v| v.len() == dimensions);
    eprintln!("{} vectors, {} queries", vectors.len(), queries.len());

    let mut indexes = Vec::new();
    for (name, metric, quantization) in KINDS {
        let started = Instant::now();
        indexes.push(build(&vectors, dimensions, metric, quantization)?);
        println!(
            "{name:12} built in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    let exact: Vec<Vec<u64>> = queries
        .iter()
        .map(|q| exact_top(&vectors, q, 100))
        .collect();

    for count in [2 * POOL, presumed_pool(POOL)] {
        let mut millis = vec![Vec::new(); KINDS.len()];
        let mut found_100 = vec![0usize; KINDS.len()];
        let mut found_10 = vec![0usize; KINDS.len()];
        for round in 0..ROUNDS {
            for (query, truth) in queries.iter().zip(&exact) {
                for (kind, index) in indexes.iter().enumerate() {
                    let started = Instant::now();
                    let proposed = index.search(query, count)?;
                    millis[kind].push(started.elapsed().as_secs_f64() * 1e3);
                    if round == 0 {
                        let proposed: HashSet<u64> = proposed.keys.into_iter().collect();
                        found_100[kind] += truth.iter().filter(|d| proposed.contains(d)).count();
                        found_10[kind] +=
                            truth[..10].iter().filter(|d| proposed.contains(d)).count();
                    }
                }
            }
        }
        for (kind, (name, _, _)) in KINDS.iter().enumerate() {
            let times = &mut millis[kind];
            times.sort_by(f64::total_cmp);
            println!(
                "ask {count:3} {name:12} search p50 {:.3} p95 {:.3} ms, recall@10 {:.4}, recall@100 {:.4}",
                times[times.len() / 2],
                times[times.len() * 95 / 100],
                found_10[kind] as f64 / (10 * queries.len()) as f64,
                found_100[kind] as f64 / (100 * queries.len()) as f64,
            );
        }
    }
    Ok(())
}

fn read_vectors(path: &str) -> rusqlite::Result<Vec<Vec<f32>>> {
    let conn = Connection::open(path)?;
    let mut stmt = conn.prepare("SELECT vector FROM vectors")?;
    let rows = stmt.query_map([], |row| {
        let blob = row.get_ref(0)?.as_blob()?;
        Ok(blob
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    })?;
    rows.collect()
}

/// Built as `ann.rs` builds an index: its degree and beams, two threads adding.
fn build(
    vectors: &[Vec<f32>],
    dimensions: usize,
    metric: MetricKind,
    quantization: ScalarKind,
) -> Result<Index, cxx::Exception> {
    let index = Index::new(&IndexOptions {
        dimensions,
        metric,
        quantization,
        connectivity: 16,
        expansion_add: 128,
        expansion_search: 128,
        multi: false,
    })?;
    index.reserve_capacity_and_threads(vectors.len(), 2)?;
    let half = vectors.len() / 2;
    std::thread::scope(|scope| {
        let workers: Vec<_> = [(0, &vectors[..half]), (half, &vectors[half..])]
            .into_iter()
            .map(|(start, part)| {
                let index = &index;
                scope.spawn(move || {
                    part.iter()
                        .enumerate()
                        .try_for_each(|(i, v)| index.add((start + i) as u64, v))
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })?;
    Ok(index)
}

/// The `k` most similar vectors by dot product (the vectors are L2-normalised).
fn exact_top(vectors: &[Vec<f32>], query: &[f32], k: usize) -> Vec<u64> {
    let mut scored: Vec<(f32, u64)> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (v.iter().zip(query).map(|(a, b)| a * b).sum(), i as u64))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(k).map(|(_, doc)| doc).collect()
}
