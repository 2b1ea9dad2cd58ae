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
pub mod client_address;
mod import;
mod metrics;
mod openapi;
mod ui;

use std::future::Future;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use mnem_api::Operations;
use mnem_mcp::MemoryTools;
use mnem_service::Authenticator;
use mnem_store::{CredentialStore, GraphStore, SearchIndex};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::TcpListener;

pub use auth::{AttemptLimit, KeyRateLimit};
pub use client_address::{IpNet, TrustedProxies};
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
    /// Key checks that are not a secret this server already verified (unknown prefixes,
    /// wrong secrets, a key's first use) allowed per minute per key prefix and per client
    /// address; over it, 429 before any store lookup or Argon2 work.
    pub unverified_per_minute: NonZeroU32,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 4 * 1024 * 1024,
            requests_per_second: NonZeroU32::new(50).expect("non-zero"),
            burst: NonZeroU32::new(100).expect("non-zero"),
            unverified_per_minute: NonZeroU32::new(20).expect("non-zero"),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ServerConfig {
    pub limits: ServerLimits,
    /// `Host` header values `/mcp` accepts (DNS-rebinding protection); loopback names are
    /// always accepted.
    pub allowed_hosts: Vec<String>,
    /// A bearer token `/metrics` accepts from any address. Without one (and for every
    /// request without it), `/metrics` answers loopback peers only: its gauges are
    /// store-wide counts across every team.
    pub metrics_token: Option<String>,
    /// Reverse proxies whose `X-Forwarded-For` names the client the per-address budgets
    /// are charged to ([`client_address`]); empty: the peer address is the client.
    pub trusted_proxies: Vec<IpNet>,
}

/// What every handler shares.
pub(crate) struct App<S> {
    ops: Operations<S>,
    auth: Arc<Authenticator<S>>,
    limiter: Arc<KeyRateLimit>,
    attempts: Arc<AttemptLimit>,
    proxies: Arc<TrustedProxies>,
    metrics: Arc<Metrics>,
    metrics_token: Option<Arc<str>>,
    max_body_bytes: usize,
}

impl<S> Clone for App<S> {
    fn clone(&self) -> Self {
        Self {
            ops: self.ops.clone(),
            auth: Arc::clone(&self.auth),
            limiter: Arc::clone(&self.limiter),
            attempts: Arc::clone(&self.attempts),
            proxies: Arc::clone(&self.proxies),
            metrics: Arc::clone(&self.metrics),
            metrics_token: self.metrics_token.clone(),
            max_body_bytes: self.max_body_bytes,
        }
    }
}

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
        ops: ops.clone().via("http"),
        auth,
        limiter: Arc::new(KeyRateLimit::new(limits.requests_per_second, limits.burst)),
        attempts: Arc::new(AttemptLimit::per_minute(limits.unverified_per_minute)),
        proxies: Arc::new(TrustedProxies::new(config.trusted_proxies.clone())),
        metrics,
        metrics_token: config.metrics_token.as_deref().map(Arc::from),
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
    let authenticated = api::routes(Router::new())
        .nest_service("/mcp", mcp)
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        // Inner: runs only for authenticated requests, so no body is read before then.
        .route_layer(middleware::from_fn_with_state(app.clone(), read_mcp::<S>))
        .route_layer(middleware::from_fn_with_state(
            app.clone(),
            auth::authenticate::<S>,
        ));
    Router::new()
        .route("/", get(|| async { Json(entry_points()) }))
        .route("/health", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/ready", get(ready::<S>))
        .route("/metrics", get(scrape::<S>))
        .route("/openapi.json", get(|| async { Json(openapi::document()) }))
        .merge(ui::routes())
        .merge(authenticated)
        .layer(middleware::from_fn_with_state(app.clone(), observe::<S>))
        .with_state(app)
}

/// What `GET /` answers: where everything is, so a person who opens the server's address
/// finds the console and the API rather than an empty 404. Says nothing about any team.
fn entry_points() -> serde_json::Value {
    json!({
        "service": "mnem",
        "version": env!("CARGO_PKG_VERSION"),
        "console": "/ui",
        "openapi": "/openapi.json",
        "mcp": "/mcp (streamable HTTP, `Authorization: Bearer <key>`)",
        "api": "/v1/<operation> (POST JSON, `Authorization: Bearer <key>`)",
        "health": "/health",
    })
}

/// Ready when the store answers (and so credentials can be checked). Says nothing more:
/// it is unauthenticated, and counts would describe every team's activity.
async fn ready<S>(State(app): State<App<S>>) -> Response
where
    S: GraphStore + SearchIndex + CredentialStore + 'static,
{
    match app.ops.memory().status().await {
        Ok(_) => Json(json!({"status": "ready"})).into_response(),
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

/// Equal without an early exit, so the comparison time says nothing about the token.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// Whether a scrape may see the store-wide gauges: the configured token, or a loopback
/// client (an in-process call has no peer and is local too). Behind a trusted proxy on
/// loopback the client is the one it forwards for, so the proxy does not open the
/// gauges to everyone it serves.
fn may_scrape(request: &Request, token: Option<&str>, proxies: &TrustedProxies) -> bool {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if let (Some(token), Some(presented)) = (token, presented) {
        return same_secret(token.as_bytes(), presented.trim().as_bytes());
    }
    request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .is_none_or(|peer| proxies.client(peer.0.ip(), request.headers()).is_loopback())
}

async fn scrape<S>(State(app): State<App<S>>, request: Request) -> Response
where
    S: GraphStore + SearchIndex + CredentialStore + 'static,
{
    if !may_scrape(&request, app.metrics_token.as_deref(), &app.proxies) {
        app.metrics.refused("metrics");
        return api::error(
            StatusCode::FORBIDDEN,
            "forbidden",
            "metrics are served to loopback peers, or with the token set by --metrics-token",
            None,
        );
    }
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

const MCP_METHODS: [&str; 4] = [
    "initialize",
    "notifications/initialized",
    "tools/list",
    "ping",
];

/// The operation an MCP request performs: the tool for `tools/call`, else the method;
/// names outside the known sets share one label, so labels stay bounded.
fn mcp_operation(message: &serde_json::Value) -> &'static str {
    let method = message["method"].as_str().unwrap_or_default();
    let known =
        |names: &[&'static str], name: &str| names.iter().copied().find(|known| *known == name);
    if method == "tools/call" {
        mnem_api::Operation::of_tool(message["params"]["name"].as_str().unwrap_or_default())
            .and_then(|op| op.tool)
            .unwrap_or("unknown_tool")
    } else {
        known(&MCP_METHODS, method).unwrap_or("other")
    }
}

/// The MCP operation of an authenticated `/mcp` request, handed from [`read_mcp`] to
/// [`observe`] on the response.
#[derive(Debug, Clone, Copy)]
struct McpCall {
    operation: &'static str,
    tool_error: bool,
}

/// JSON-RPC's "parse error": the body is not JSON.
const JSON_RPC_PARSE_ERROR: i64 = -32700;

/// For an authenticated `POST /mcp`: reads the body (within the limit) to name the
/// operation for metrics, answers a body that is not JSON with 400 and JSON-RPC −32700,
/// and marks a tool call whose result is an error.
async fn read_mcp<S>(State(app): State<App<S>>, request: Request, next: Next) -> Response
where
    S: GraphStore + SearchIndex + CredentialStore + 'static,
{
    // The JSON API reads its own bodies (a streamed import must not be buffered here).
    if request.method() != axum::http::Method::POST || request.uri().path().starts_with("/v1/") {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, app.max_body_bytes).await else {
        return api::error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            &format!("request body exceeds {} bytes", app.max_body_bytes),
            None,
        );
    };
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        let mut response = (
            StatusCode::BAD_REQUEST,
            Json(json!({"jsonrpc": "2.0", "id": null, "error": {
                "code": JSON_RPC_PARSE_ERROR, "message": "parse error: the body is not JSON"}})),
        )
            .into_response();
        response.extensions_mut().insert(McpCall {
            operation: "unparsed",
            tool_error: false,
        });
        return response;
    };
    let operation = mcp_operation(&message);
    let mut response = next.run(Request::from_parts(parts, bytes.into())).await;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !is_json {
        // An event stream or an empty 202: passed on as it is, never buffered.
        response.extensions_mut().insert(McpCall {
            operation,
            tool_error: false,
        });
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // Stateless JSON responses: one small document. A tool's failure is `isError` inside
    // a 200, invisible to the status code, so it is read here for the metrics.
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let tool_error = serde_json::from_slice::<serde_json::Value>(&bytes)
        .is_ok_and(|reply| reply["result"]["isError"] == json!(true));
    parts.extensions.insert(McpCall {
        operation,
        tool_error,
    });
    Response::from_parts(parts, bytes.into())
}

/// Records every `/mcp` and `/v1/` request's count and latency per operation. Reads no
/// body: an MCP operation is named by [`read_mcp`] after authentication.
async fn observe<S>(State(app): State<App<S>>, request: Request, next: Next) -> Response
where
    S: GraphStore + SearchIndex + CredentialStore + 'static,
{
    let path = request.uri().path().to_string();
    let transport = if path.starts_with("/v1/") {
        "http"
    } else if path == "/mcp" {
        "mcp"
    } else {
        return next.run(request).await;
    };
    let started = Instant::now();
    let response = next.run(request).await;
    let (operation, status) = match path.strip_prefix("/v1/") {
        // Known operations only: a label per arbitrary path would grow without bound.
        Some(op) => (
            mnem_api::Operation::named(op).map_or("unknown", |known| known.name),
            response.status().as_u16().to_string(),
        ),
        None => match response.extensions().get::<McpCall>() {
            Some(call) if call.tool_error => (call.operation, "tool_error".to_string()),
            Some(call) => (call.operation, response.status().as_u16().to_string()),
            None => ("unauthenticated", response.status().as_u16().to_string()),
        },
    };
    app.metrics
        .observe(transport, operation, &status, started.elapsed());
    response
}

/// Serves `router` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // The peer address feeds the per-address limit on unverified key checks.
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}
