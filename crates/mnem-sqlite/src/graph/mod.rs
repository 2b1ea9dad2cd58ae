//! The semantic layer on SQLite, a module per job: `write` (the row operations of
//! `mnem_store::graph_write`), `relationships` (one column list, row mapping and time view
//! for every relationship read), `trace` (trace's rows) and `discovery` (the bounded
//! frontier). Here: the script runner and the row adapter they share.

pub mod discovery;
pub mod relationships;
pub mod trace;
pub mod write;

use std::future::Future;
use std::task::{Context, Poll, Waker};

use mnem_store::{Result, StoreError};
use rusqlite::types::Value;
use rusqlite::Connection;

/// Runs a `mnem_store` graph script (`graph_write`, `trace_read`) over `SqliteRows`.
/// SQLite statements complete when called, so the script's future is ready on its first
/// poll; one that is not is reported as a bug rather than spun on.
pub fn run<T>(script: impl Future<Output = Result<T>>) -> Result<T> {
    let mut script = std::pin::pin!(script);
    match script
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => Err(StoreError::Backend(
            "a SQLite graph script did not complete when run".into(),
        )),
    }
}

/// One SQLite transaction (or, for reads such as an idempotency replay or a trace, a
/// connection) as `GraphRows` (in `write`) and `TraceRows` (in `trace`). Its futures never
/// wait: each statement runs to completion.
pub struct SqliteRows<'c> {
    pub conn: &'c Connection,
}

/// Ids as one JSON array of hex strings, for `SELECT unhex(value) FROM json_each(?)`: a
/// list of any length in one parameter, so the statement text stays constant.
pub(crate) fn hex_ids<'a>(ids: impl IntoIterator<Item = &'a [u8; 16]>) -> Result<String> {
    let ids: Vec<String> = ids
        .into_iter()
        .map(|id| id.iter().map(|b| format!("{b:02x}")).collect())
        .collect();
    serde_json::to_string(&ids).map_err(StoreError::backend)
}

pub(super) fn blob(bytes: &[u8; 16]) -> Value {
    Value::Blob(bytes.to_vec())
}
