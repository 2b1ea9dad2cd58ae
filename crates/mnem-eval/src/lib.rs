//! Measuring instruments. `mnem bench` ([`bench`]): speed, size and memory at scale on a
//! seeded synthetic corpus ([`synthetic`]). `mnem eval`: retrieval quality on public long-term memory benchmarks, measured through
//! the same service layer every transport uses. A dataset is read into one shape
//! ([`dataset::Dataset`]), ingested one team per haystack, and every question recalled
//! twice: once as an agent would (default limit and byte budget: what fits is what
//! counts) and once deep (50 results) to rank gold turns and sessions.

pub mod bench;
pub mod cache;
pub mod contextual;
pub mod dataset;
mod error;
pub mod fit;
pub mod graph_bench;
pub mod hashing;
pub mod locomo;
pub mod longmemeval;
pub mod mentions;
pub mod metrics;
pub mod report;
pub mod run;
pub mod screening;
pub mod synthetic;

pub use dataset::{Dataset, QuestionClass};
pub use error::EvalError;
pub use fit::FitReport;
pub use report::{BudgetResult, EvalReport, GroupMetrics, ProfileReport, QuestionResult};
pub use run::{run, EvalOptions, AGENT_BUDGETS};

/// Reads a benchmark file by dataset name (`longmemeval` or `locomo`).
pub fn read(
    dataset: &str,
    path: &std::path::Path,
    max_questions: Option<usize>,
) -> Result<Dataset, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::Read {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    match dataset {
        "longmemeval" => longmemeval::parse(&text, max_questions),
        "locomo" => locomo::parse(&text, max_questions),
        other => Err(EvalError::Read {
            path: path.display().to_string(),
            reason: format!("unknown dataset {other:?} (longmemeval, locomo)"),
        }),
    }
}
