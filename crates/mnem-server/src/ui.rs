//! The web console at `/ui`: three static files compiled into the binary (no CDN, no
//! build step). It is a client of the JSON API like any other — the page holds no
//! data and needs no key; every read it makes carries the user's API key. A strict
//! Content-Security-Policy allows only these files' own script and style, as a second
//! line behind the page rendering every stored text as text.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

const INDEX: &str = include_str!("../ui/index.html");
const SCRIPT: &str = include_str!("../ui/app.js");
const STYLE: &str = include_str!("../ui/app.css");

/// No inline script or style, no other origin, no framing.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `/ui` and its two assets.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let index = || async { asset("text/html; charset=utf-8", INDEX) };
    Router::new()
        .route("/ui", get(index))
        .route("/ui/", get(index))
        .route(
            "/ui/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/ui/app.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}
