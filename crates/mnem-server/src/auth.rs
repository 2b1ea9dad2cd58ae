//! Authentication and rate limiting, run before any handler on `/mcp` and `/v1/` and
//! before any body is read: the request's bearer key becomes a [`Principal`] in its
//! extensions, or the request ends here with 401 (missing, invalid, revoked, expired) or
//! 429 (over the key's rate, or too many unverified key checks for its prefix or from its
//! address — refused before the store lookup and the Argon2 check they would cost).

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use mnem_core::KeyRefusal;
use mnem_service::AuthError;
use mnem_store::{CredentialStore, GraphStore, SearchIndex};

use crate::api::error;
use crate::App;

/// A per-credential token bucket: `per_second` sustained, `burst` at once.
pub struct KeyRateLimit {
    limiter: DefaultKeyedRateLimiter<String>,
    clock: DefaultClock,
}

impl KeyRateLimit {
    pub fn new(per_second: NonZeroU32, burst: NonZeroU32) -> Self {
        Self {
            limiter: RateLimiter::keyed(Quota::per_second(per_second).allow_burst(burst)),
            clock: DefaultClock::default(),
        }
    }

    /// `Err(wait)` when `key` must wait before its next request.
    fn check(&self, key: &str) -> Result<(), Duration> {
        self.limiter
            .check_key(&key.to_string())
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }
}

/// Unverified key checks (store lookup + Argon2) per key prefix and per client address.
/// Fail-closed: over either budget, the check does not run.
pub struct AttemptLimit {
    by_prefix: DefaultKeyedRateLimiter<String>,
    by_address: DefaultKeyedRateLimiter<IpAddr>,
    clock: DefaultClock,
}

/// Distinct prefixes or addresses tracked before idle ones are dropped: random prefixes
/// must not grow the limiter's memory without bound.
const TRACKED_KEYS: usize = 10_000;

impl AttemptLimit {
    pub fn per_minute(attempts: NonZeroU32) -> Self {
        let quota = Quota::per_minute(attempts).allow_burst(attempts);
        Self {
            by_prefix: RateLimiter::keyed(quota),
            by_address: RateLimiter::keyed(quota),
            clock: DefaultClock::default(),
        }
    }

    /// `Err(wait)` when `address` or `prefix` has used its unverified checks.
    pub fn check(&self, prefix: &str, address: Option<IpAddr>) -> Result<(), Duration> {
        if self.by_prefix.len() > TRACKED_KEYS || self.by_address.len() > TRACKED_KEYS {
            self.by_prefix.retain_recent();
            self.by_address.retain_recent();
        }
        let wait = |not_until: governor::NotUntil<_>| not_until.wait_time_from(self.clock.now());
        if let Some(address) = address {
            self.by_address.check_key(&address).map_err(wait)?;
        }
        self.by_prefix.check_key(&prefix.to_string()).map_err(wait)
    }
}

fn too_many(message: &str, wait: Duration) -> Response {
    let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
    let mut response = error(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
        &format!("{message}; retry in {seconds} s"),
        None,
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    response
}

fn bearer(request: &Request) -> Option<&str> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

fn unauthorized(message: &str) -> Response {
    let mut response = error(StatusCode::UNAUTHORIZED, "unauthorized", message, None);
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

pub(crate) async fn authenticate<S>(
    State(app): State<App<S>>,
    mut request: Request,
    next: Next,
) -> Response
where
    S: GraphStore + SearchIndex + CredentialStore + 'static,
{
    let Some(token) = bearer(&request) else {
        app.metrics.refused("missing");
        return unauthorized(&AuthError::Missing.to_string());
    };
    let address = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| app.proxies.client(peer.ip(), request.headers()));
    let gate = |prefix: &str| app.attempts.check(prefix, address);
    let principal = match app.auth.authenticate_gated(token, gate).await {
        Ok(principal) => principal,
        Err(AuthError::Throttled { retry_after }) => {
            app.metrics.refused("throttled");
            return too_many("too many unverified key attempts", retry_after);
        }
        Err(AuthError::Store(err)) => {
            tracing::error!(%err, "credential lookup failed");
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "credentials cannot be checked right now",
                None,
            );
        }
        Err(err) => {
            app.metrics.refused(match &err {
                AuthError::Refused(KeyRefusal::Revoked) => "revoked",
                AuthError::Refused(KeyRefusal::Expired) => "expired",
                _ => "invalid",
            });
            return unauthorized(&err.to_string());
        }
    };
    if let Some(prefix) = &principal.key_prefix {
        if let Err(wait) = app.limiter.check(prefix) {
            app.metrics.refused("rate_limited");
            return too_many("too many requests for this key", wait);
        }
    }
    request.extensions_mut().insert(principal);
    next.run(request).await
}
