//! Prometheus metrics at `/metrics`: calls and latency per operation and transport,
//! authentication refusals, recall branch degradation and search freshness.

use std::time::Duration;

use mnem_store::SearchFreshness;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    transport: String,
    operation: String,
    /// The HTTP status, or `tool_error` for an MCP tool call that failed inside a 200.
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    transport: String,
    operation: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabels {
    stage: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BranchLabels {
    branch: String,
}

fn latency_histogram() -> Histogram {
    // 1 ms to ~16 s: a lexical recall is single-digit ms, an Argon2 check ~28 ms.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    latency: Family<OperationLabels, Histogram, fn() -> Histogram>,
    refusals: Family<ReasonLabels, Counter>,
    recall_stages: Family<StageLabels, Histogram, fn() -> Histogram>,
    degraded: Family<BranchLabels, Gauge>,
    pending_documents: Gauge,
    failed_documents: Gauge,
    oldest_pending_age: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let calls = Family::<CallLabels, Counter>::default();
        let latency = Family::<OperationLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let refusals = Family::<ReasonLabels, Counter>::default();
        let recall_stages =
            Family::<StageLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        let degraded = Family::<BranchLabels, Gauge>::default();
        let pending_documents = Gauge::default();
        let failed_documents = Gauge::default();
        let oldest_pending_age = Gauge::default();
        let mut registry = Registry::with_prefix("mnem");
        registry.register(
            "requests",
            "Requests per transport (mcp, http), operation (tool) and HTTP status",
            calls.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Request latency per transport and operation",
            latency.clone(),
        );
        registry.register(
            "auth_refusals",
            "Requests refused before any handler (missing, invalid, revoked, expired key; rate limited)",
            refusals.clone(),
        );
        registry.register(
            "recall_stage_seconds",
            "Time inside a recall spent embedding the query, building evidence windows and choosing discovery paths",
            recall_stages.clone(),
        );
        registry.register(
            "degraded_recalls",
            "Recalls that ran without this branch since the process started",
            degraded.clone(),
        );
        registry.register(
            "search_pending_documents",
            "Search documents committed but not yet embedded",
            pending_documents.clone(),
        );
        registry.register(
            "search_failed_documents",
            "Search documents the embedding worker gave up on",
            failed_documents.clone(),
        );
        registry.register(
            "search_oldest_pending_age_seconds",
            "Age of the oldest document waiting for its vector (0 when none)",
            oldest_pending_age.clone(),
        );
        Self {
            registry,
            calls,
            latency,
            refusals,
            recall_stages,
            degraded,
            pending_documents,
            failed_documents,
            oldest_pending_age,
        }
    }
}

impl Metrics {
    pub fn observe(&self, transport: &str, operation: &str, status: &str, elapsed: Duration) {
        self.calls
            .get_or_create(&CallLabels {
                transport: transport.to_string(),
                operation: operation.to_string(),
                status: status.to_string(),
            })
            .inc();
        self.latency
            .get_or_create(&OperationLabels {
                transport: transport.to_string(),
                operation: operation.to_string(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Stage timings of one recall (zero-length stages that did not run are skipped).
    pub fn recalled(&self, query_embedding: Duration, windows: Duration, discovery: Duration) {
        for (stage, elapsed) in [
            ("query_embedding", query_embedding),
            ("windows", windows),
            ("discovery", discovery),
        ] {
            if !elapsed.is_zero() {
                self.recall_stages
                    .get_or_create(&StageLabels {
                        stage: stage.to_string(),
                    })
                    .observe(elapsed.as_secs_f64());
            }
        }
    }

    pub fn refused(&self, reason: &str) {
        self.refusals
            .get_or_create(&ReasonLabels {
                reason: reason.to_string(),
            })
            .inc();
    }

    /// The text exposition, with the gauges read at scrape time.
    pub fn render(
        &self,
        degraded: [(&'static str, u64); 2],
        freshness: Option<&SearchFreshness>,
    ) -> String {
        for (branch, count) in degraded {
            self.degraded
                .get_or_create(&BranchLabels {
                    branch: branch.to_string(),
                })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        if let Some(freshness) = freshness {
            let gauge = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
            self.pending_documents
                .set(gauge(freshness.pending_document_count));
            self.failed_documents
                .set(gauge(freshness.failed_document_count));
            self.oldest_pending_age
                .set(freshness.oldest_pending_age_seconds.unwrap_or(0));
        }
        let mut text = String::new();
        if let Err(err) = encode(&mut text, &self.registry) {
            tracing::error!(%err, "metrics encoding failed");
        }
        text
    }
}
