//! Query-embedding latency of the built-in model: one short query at a time, as recall
//! embeds it. `cargo run --release -p mnem-embed --example query_latency [RUNS]`.
use std::time::Instant;

use mnem_embed::{Embedder, MiniLm};

const QUERY: &str = "What did Caroline say about the adoption agency she chose last summer?";

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let model = MiniLm::builtin().expect("model");
    for _ in 0..20 {
        model.embed(&[QUERY]).expect("warm-up");
    }
    let mut millis: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            model.embed(&[QUERY]).expect("embed");
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    millis.sort_by(f64::total_cmp);
    let at = |q: f64| millis[((millis.len() - 1) as f64 * q) as usize];
    println!(
        "query embedding ({runs} runs): p50 {:.2} ms, p95 {:.2} ms, min {:.2} ms",
        at(0.5),
        at(0.95),
        millis[0]
    );
}
