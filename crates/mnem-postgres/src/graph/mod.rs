//! The semantic layer on PostgreSQL, a module per job: `write` (the row operations of
//! `mnem_store::graph_write`), `relationships` (one column list, row mapping and time view
//! for every relationship read), `trace` (trace's rows) and `discovery` (the bounded
//! frontier). The same statements as the embedded store's, so both answer the same. Here:
//! the row adapter they share.

pub mod discovery;
pub mod relationships;
pub mod trace;
pub mod write;

use crate::Param;

/// One PostgreSQL transaction as `GraphRows` (in `write`) and `TraceRows` (in `trace`).
pub struct PgRows<'a, 't> {
    pub tx: &'a deadpool_postgres::Transaction<'t>,
}

/// A parameter for `relationships_where` and the other reads of this module.
pub(super) fn boxed(value: impl tokio_postgres::types::ToSql + Sync + Send + 'static) -> Param {
    Box::new(value)
}
