//! The embedding worker: pending search documents → vectors, in batches, with bounded
//! retries. A pass stops at the first failing batch so an unreachable provider costs one
//! attempt per pass, not every attempt at once.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnem_core::Actor;
use mnem_store::{GraphStore, PendingDocument, Result as StoreResult, SearchIndex};
use serde::Serialize;
use tokio::sync::Notify;

use crate::{Memory, Result};

/// Documents per provider call; the local model sorts them by length and further splits
/// them, so a larger call wastes less on padding (`mnem eval longmemeval … --questions
/// 8`: 45.5 turns/s at 256 against 42.9/s at 64).
pub const EMBED_BATCH: usize = 256;
/// After this many failed attempts a document is `failed` (reported by `mnem status`).
pub const MAX_EMBED_ATTEMPTS: u32 = 3;
/// A one-shot command's batches: small, so its time budget is checked often.
pub const OWN_WRITE_BATCH: usize = 32;
/// How long a one-shot command (`mnem remember`) embeds before it exits: its own write
/// comes first, the rest stays pending for a long-lived worker (`mnem serve`, `mnem mcp`).
pub const OWN_WRITE_EMBED_BUDGET: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EmbedReport {
    pub embedded: usize,
    pub failed_attempts: usize,
    /// A time-bounded pass stopped with documents still pending.
    pub left_pending: bool,
}

impl<S: GraphStore + SearchIndex> Memory<S> {
    /// Embeds pending documents until none are left or a batch fails. Without an
    /// embedder there is nothing to do: documents stay pending.
    pub async fn embed_pending(&self) -> Result<EmbedReport> {
        self.embed_pending_reporting(|_| {}).await
    }

    /// [`Self::embed_pending`], calling `progress` with the running count of embedded
    /// documents after each batch (for progress bars on long ingests).
    pub async fn embed_pending_reporting(
        &self,
        progress: impl Fn(usize) + Send,
    ) -> Result<EmbedReport> {
        self.embed_batches(|| self.store.pending_documents(EMBED_BATCH), None, progress)
            .await
    }

    /// What a one-shot command runs after its write: the actor's team's pending
    /// documents, newest (its own write) first, until none are left or `budget` is spent
    /// (checked between batches of [`OWN_WRITE_BATCH`]; the first always runs).
    /// Another team's backlog is never touched; the rest of this team's stays pending for
    /// a long-lived worker, and `left_pending` says whether any did.
    pub async fn embed_own_writes(&self, actor: &Actor, budget: Duration) -> Result<EmbedReport> {
        let deadline = Instant::now() + budget;
        let team = actor.team;
        let fetch = || self.store.team_pending_documents(team, OWN_WRITE_BATCH);
        self.embed_batches(fetch, Some(deadline), |_| {}).await
    }

    async fn embed_batches<F>(
        &self,
        fetch: impl Fn() -> F + Send,
        deadline: Option<Instant>,
        progress: impl Fn(usize) + Send,
    ) -> Result<EmbedReport>
    where
        F: Future<Output = StoreResult<Vec<PendingDocument>>> + Send,
    {
        let mut report = EmbedReport::default();
        let Some(embedder) = self.embedder.clone() else {
            return Ok(report);
        };
        let mut first = true;
        loop {
            let batch = fetch().await?;
            if batch.is_empty() {
                return Ok(report);
            }
            // The first batch always runs: newest first, it holds the caller's own write.
            if !first && deadline.is_some_and(|d| Instant::now() >= d) {
                report.left_pending = true;
                return Ok(report);
            }
            first = false;
            let texts: Vec<String> = batch.iter().map(|d| d.text.clone()).collect();
            let worker_embedder = Arc::clone(&embedder);
            let outcome = tokio::task::spawn_blocking(move || {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                worker_embedder.embed(&refs)
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()));
            match outcome {
                Ok(vectors) => {
                    report.embedded += batch.len();
                    let pairs: Vec<(PendingDocument, Vec<f32>)> =
                        batch.into_iter().zip(vectors).collect();
                    self.store.store_vectors(embedder.contract(), pairs).await?;
                    tracing::debug!(embedded = report.embedded, "embedding worker progress");
                    progress(report.embedded);
                }
                Err(reason) => {
                    tracing::warn!(%reason, documents = batch.len(), "embedding batch failed");
                    report.failed_attempts += batch.len();
                    let failures = batch.into_iter().map(|d| (d, reason.clone())).collect();
                    self.store
                        .record_failures(failures, MAX_EMBED_ATTEMPTS)
                        .await?;
                    return Ok(report);
                }
            }
        }
    }
}

/// Runs the worker in the background of a long-lived process: a pass whenever `wake` is
/// notified (after a write) and at least every `interval` (to retry failures).
pub fn spawn_worker<S>(
    memory: Arc<Memory<S>>,
    wake: Arc<Notify>,
    interval: Duration,
) -> tokio::task::JoinHandle<()>
where
    S: GraphStore + SearchIndex + 'static,
{
    tokio::spawn(async move {
        loop {
            if let Err(err) = memory.embed_pending().await {
                tracing::warn!(%err, "embedding worker pass failed");
            }
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(interval) => {}
            }
        }
    })
}
