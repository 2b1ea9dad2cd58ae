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
/// list of any length in one parameter, so the statement text stays constant. Written by
/// hand (hex digits need no JSON escaping): a `format!` per byte was 5% of a recall's
/// store reads, through the support signal's read.
pub(crate) fn hex_ids<'a>(ids: impl IntoIterator<Item = &'a [u8; 16]>) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut json = String::from("[");
    for (i, id) in ids.into_iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        json.push('"');
        for byte in id {
            json.push(char::from(DIGITS[usize::from(byte >> 4)]));
            json.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
        }
        json.push('"');
    }
    json.push(']');
    json
}

pub(super) fn blob(bytes: &[u8; 16]) -> Value {
    Value::Blob(bytes.to_vec())
}

#[cfg(test)]
mod tests {
    use super::hex_ids;

    /// The array SQLite's `json_each` and `unhex` read back into the same ids.
    #[test]
    fn ids_travel_as_a_json_array_of_lower_case_hex() {
        let a = [
            0x00, 0x01, 0x0a, 0xff, 0x10, 0x9c, 0x7e, 0xe7, 0, 0, 0, 0, 0, 0, 0, 0x42,
        ];
        let b = [0xab; 16];
        let json = hex_ids([&a, &b]);
        let parsed: Vec<String> = serde_json::from_str(&json).unwrap();
        assert_eq!(
            parsed,
            [
                "00010aff109c7ee70000000000000042",
                "abababababababababababababababab"
            ]
        );
        assert_eq!(hex_ids(std::iter::empty()), "[]");
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let back: Vec<Vec<u8>> = conn
            .prepare("SELECT unhex(value) FROM json_each(?1)")
            .unwrap()
            .query_map([&json], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(back, [a.to_vec(), b.to_vec()]);
    }
}
