//! `POST /v1/import`: a chat transcript streamed as JSON Lines (`mnem import --format
//! chat` over HTTP). Lines are read as they arrive and written in batches, so a long
//! transcript never sits whole in memory; the answer is the import's report, with every
//! line that could not be read or written by number.

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use http_body_util::BodyExt;
use mnem_api::Operations;
use mnem_core::import::{ChatLines, ChatSource};
use mnem_core::{Principal, Timestamp};
use mnem_service::{ImportReport, IMPORT_BATCH};
use mnem_store::{CredentialStore, GraphStore, SearchIndex};
use serde::Deserialize;

use crate::api::{error, op_error};
use crate::App;

/// The longest line kept waiting for its end: past it the line is reported and dropped.
const MAX_LINE_BYTES: usize = 2 * mnem_core::evidence::MAX_CONTENT_BYTES;

/// `?source=…&session=…&start=…`: what names the transcript in each item's `source`,
/// the session of turns that name none, and when a session without times began (default
/// now: give it, or times on the turns, for a re-sent transcript to change nothing).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ImportParams {
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    start: Option<String>,
}

pub(crate) async fn import<S>(
    State(app): State<App<S>>,
    Extension(caller): Extension<Principal>,
    params: Result<Query<ImportParams>, QueryRejection>,
    body: Body,
) -> Response
where
    S: GraphStore + SearchIndex + CredentialStore + 'static,
{
    // An unknown or malformed parameter answers in the API's error shape, not text.
    let Query(params) = match params {
        Ok(params) => params,
        Err(rejection) => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                &rejection.body_text(),
                None,
            )
        }
    };
    if let Err(err) = Operations::<S>::require_writer(&caller) {
        return op_error(err);
    }
    let start = match params
        .start
        .as_deref()
        .map(|t| Timestamp::parse("start", t))
    {
        None => app.ops.now(),
        Some(Ok(start)) => start,
        Some(Err(err)) => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                &err.to_string(),
                Some("start"),
            )
        }
    };
    let source = ChatSource {
        file: params.source.unwrap_or_else(|| "import".into()),
        default_session: params.session.unwrap_or_else(|| "import".into()),
        start,
    };
    match stream(&app.ops, &caller, source, body).await {
        Ok(report) => Json(report).into_response(),
        Err(response) => response,
    }
}

/// Reads `body` line by line into batches and writes each as it fills.
async fn stream<S>(
    ops: &Operations<S>,
    caller: &Principal,
    source: ChatSource,
    mut body: Body,
) -> Result<ImportReport, Response>
where
    S: GraphStore + SearchIndex + 'static,
{
    let mut lines = ChatLines::new(source);
    let mut report = ImportReport::default();
    let mut pending: Vec<u8> = Vec::new();
    let mut number = 0;
    let mut oversized = false;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                &format!("the body could not be read: {e}"),
                None,
            )
        })?;
        let Some(data) = frame.data_ref() else {
            continue;
        };
        for &byte in data.iter() {
            if byte != b'\n' {
                if pending.len() < MAX_LINE_BYTES {
                    pending.push(byte);
                } else {
                    oversized = true;
                }
                continue;
            }
            number += 1;
            take_line(&mut lines, number, &mut pending, &mut oversized);
        }
        if lines.pending() >= IMPORT_BATCH {
            write(ops, caller, &mut lines, &mut report).await?;
        }
    }
    if !pending.is_empty() || oversized {
        number += 1;
        take_line(&mut lines, number, &mut pending, &mut oversized);
    }
    write(ops, caller, &mut lines, &mut report).await?;
    Ok(report)
}

/// Hands one complete line to the reader (a problem if it is too long or not UTF-8).
fn take_line(lines: &mut ChatLines, number: usize, pending: &mut Vec<u8>, oversized: &mut bool) {
    if *oversized {
        lines.problem(
            number,
            format!("the line is longer than {MAX_LINE_BYTES} bytes"),
        );
    } else {
        match std::str::from_utf8(pending) {
            Ok(text) => lines.push(number, text.trim_end_matches('\r')),
            Err(_) => lines.problem(number, "not UTF-8 text"),
        }
    }
    pending.clear();
    *oversized = false;
}

async fn write<S>(
    ops: &Operations<S>,
    caller: &Principal,
    lines: &mut ChatLines,
    report: &mut ImportReport,
) -> Result<(), Response>
where
    S: GraphStore + SearchIndex + 'static,
{
    let read = lines.take();
    report.failed.extend(read.problems);
    if read.items.is_empty() {
        return Ok(());
    }
    ops.import_items(caller, read.items, report)
        .await
        .map_err(op_error)
}
