//! `mnem serve`: the memory over HTTP for many agents and teams — streamable-HTTP MCP at
//! `/mcp`, the JSON API under `/v1/` (documented at `/openapi.json`), `/health`, `/ready`
//! and Prometheus `/metrics`.
//!
//! Architecture invariant: every request to `/mcp` or `/v1/` is authenticated by its API
//! key before any handler runs; the resulting principal (team, profile, access) travels
//! in the request's extensions and is the only source of the team a handler acts in.
//! The server keeps no per-client state (MCP runs stateless), so any number of servers
//! can share one database.

mod api;
mod auth;
mod metrics;
mod openapi;

use std::future::Future;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use mnem_mcp::{MemoryTools, Operations};
use mnem_service::Authenticator;
use mnem_store::{CredentialStore, GraphStore, SearchIndex};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::TcpListener;

pub use auth::KeyRateLimit;
pub use metrics::Metrics;

/// Request limits; the per-request ones (query length, list sizes, evidence count) are
/// the core's validation and hold on every transport.
#[derive(Debug, Clone)]
pub struct ServerLimits {
    /// Largest request body: a remember holds at most 50 evidence items of 64 KiB.
    pub max_body_bytes: usize,
    /// Sustained requests per second per API key.
    pub requests_per_second: NonZeroU32,
    /// Requests a key may make at once before the sustained rate applies.
    pub burst: NonZeroU32,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 4 * 1024 * 1024,
            requests_per_second: NonZeroU32::new(50).expect("non-zero"),
            burst: NonZeroU32::new(100).expect("non-zero"),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ServerConfig {
    pub limits: ServerLimits,
    /// `Host` header values `/mcp` accepts (DNS-rebinding protection); loopback names are
    /// always accepted.
    pub allowed_hosts: Vec<String>,
}

/// What every handler shares.
pub(crate) struct App<S> {
    ops: Operations<S>,
    auth: Arc<Authenticator<S>>,
    limiter: Arc<KeyRateLimit>,
    metrics: Arc<Metrics>,
    max_body_bytes: usize,
}

impl<S> Clone for App<S> {
    fn clone(&self) -> Self {
        Self {
            ops: self.ops.clone(),
            auth: Arc::clone(&self.auth),
            limiter: Arc::clone(&self.limiter),
            metrics: Arc::clone(&self.metrics),
            max_body_bytes: self.max_body_bytes,
        }
    }
}

const API_OPERATIONS: [&str; 6] = [
    "recall", "remember", "trace", "retract", "correct", "forget",
];

/// The server's routes over `ops`, authenticating with `auth`.
pub fn router<S>(ops: Operations<S>, auth: Arc<Authenticator<S>>, config: &ServerConfig) -> Router
where
    S: GraphStore + SearchIndex + CredentialStore + Clone + 'static,
{
    let limits = &config.limits;
    let metrics = Arc::new(Metrics::default());
    let observed = Arc::clone(&metrics);
    let ops = ops.observing(Arc::new(move |recall| {
        observed.recalled(recall.query_embedding, recall.windows, recall.discovery)
    }));
    let app = App {
        ops: ops.clone(),
        auth,
        limiter: Arc::new(KeyRateLimit::new(limits.requests_per_second, limits.burst)),
        metrics,
        max_body_bytes: limits.max_body_bytes,
    };
    let tools = MemoryTools::per_request(ops);
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
    hosts.extend(config.allowed_hosts.iter().cloned());
    let mcp = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(NeverSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_max_request_body_bytes(limits.max_body_bytes)
            .with_allowed_hosts(hosts),
    );
    let authenticated = Router::new()
        .route("/v1/recall", post(api::recall::<S>))
        .route("/v1/remember", post(api::remember::<S>))
        .route("/v1/trace", post(api::trace::<S>))
        .route("/v1/retract", post(api::retract::<S>))
        .route("/v1/release", post(api::release::<S>))
        .route("/v1/quarantined", post(api::quarantined::<S>))
        .route("/v1/correct", post(api::correct::<S>))
        .route("/v1/forget", post(api::forget::<S>))
        .nest_service("/mcp", mcp)
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .route_layer(middleware::from_fn_with_state(
            app.clone(),
            auth::authenticate::<S>,
        ));
    Router::new()
        .route("/health", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/ready", get(ready::<S>))
        .route("/metrics", get(scrape::<S>))
        .route("/openapi.json", get(|| async { Json(openapi::document()) }))
        .merge(authenticated)
        .layer(middleware::from_fn_with_state(app.clone(), observe::<S>))
        .with_state(app)
}

/// Ready when the store answers (and so credentials can be checked).
async fn ready<S>(State(app): State<App<S>>) -> Response
where
    S: GraphStore + SearchIndex + CredentialStore + 'static,
{
    match app.ops.memory().status().await {
        Ok(status) => Json(json!({
            "status": "ready",
            "search_freshness": status.search_freshness,
        }))
        .into_response(),
        Err(err) => {
            tracing::warn!(%err, "not ready");
            api::error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the store is not answering",
                None,
            )
        }
    }
}

async fn scrape<S>(State(app): State<App<S>>) -> Response
where
    S: GraphStore + SearchIndex + CredentialStore + 'static,
{
    let memory = app.ops.memory();
    let freshness = memory.status().await.ok().map(|s| s.search_freshness);
    let text = app
        .metrics
        .render(memory.degraded_recall_counts(), freshness.as_ref());
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

const MCP_TOOLS: [&str; 6] = [
    "recall_memory",
    "remember",
    "trace_memory",
    "retract_evidence",
    "correct_relationship",
    "forget",
];
const MCP_METHODS: [&str; 4] = [
    "initialize",
    "notifications/initialized",
    "tools/list",
    "ping",
];

/// The operation an MCP request performs: the tool for `tools/call`, else the method;
/// names outside the known sets share one label, so labels stay bounded.
fn mcp_operation(body: &[u8]) -> &'static str {
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(body) else {
        return "unparsed";
    };
    let method = message["method"].as_str().unwrap_or_default();
    let known =
        |names: &[&'static str], name: &str| names.iter().copied().find(|known| *known == name);
    if method == "tools/call" {
        known(
            &MCP_TOOLS,
            message["params"]["name"].as_str().unwrap_or_default(),
        )
        .unwrap_or("unknown_tool")
    } else {
        known(&MCP_METHODS, method).unwrap_or("other")
    }
}

/// Records every `/mcp` and `/v1/` request's count and latency per operation.
async fn observe<S>(State(app): State<App<S>>, request: Request, next: Next) -> Response
where
    S: GraphStore + SearchIndex + CredentialStore + 'static,
{
    let path = request.uri().path().to_string();
    let (transport, operation, request) = if let Some(op) = path.strip_prefix("/v1/") {
        // Known operations only: a label per arbitrary path would grow without bound.
        let known = API_OPERATIONS.contains(&op);
        (
            "http",
            if known { op } else { "unknown" }.to_string(),
            request,
        )
    } else if path == "/mcp" && request.method() == axum::http::Method::POST {
        // The tool name is in the JSON-RPC body: read it (within the body limit) and
        // hand the same bytes on.
        let (parts, body) = request.into_parts();
        let bytes: Bytes = match axum::body::to_bytes(body, app.max_body_bytes).await {
            Ok(bytes) => bytes,
            Err(_) => {
                return api::error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    &format!("request body exceeds {} bytes", app.max_body_bytes),
                    None,
                )
            }
        };
        let operation = mcp_operation(&bytes).to_string();
        ("mcp", operation, Request::from_parts(parts, bytes.into()))
    } else {
        return next.run(request).await;
    };
    let started = Instant::now();
    let response = next.run(request).await;
    app.metrics.observe(
        transport,
        &operation,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// Serves `router` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}
