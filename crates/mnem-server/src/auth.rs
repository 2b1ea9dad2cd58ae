//! Authentication and rate limiting, run before any handler on `/mcp` and `/v1/`: the
//! request's bearer key becomes a [`Principal`] in its extensions, or the request ends
//! here with 401 (missing, invalid, revoked, expired) or 429 (over the key's rate).

use std::num::NonZeroU32;
use std::time::Duration;

use axum::extract::{Request, State};
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
    let principal = match app.auth.authenticate(token).await {
        Ok(principal) => principal,
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
            let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
            let mut response = error(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                &format!("too many requests for this key; retry in {seconds} s"),
                None,
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            return response;
        }
    }
    request.extensions_mut().insert(principal);
    next.run(request).await
}
