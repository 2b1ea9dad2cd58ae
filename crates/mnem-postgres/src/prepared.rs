//! Statements prepared once per pooled connection: deadpool keeps a statement cache on
//! each connection, so a later call skips the parse round trip, and PostgreSQL may keep
//! a generic plan instead of planning every call — it does for most of a recall's
//! reads, small index lookups that took longer to plan than to run (0.1-0.5 ms each;
//! see [`crate::SET_TEAM_FOR_LOOKUPS`] for the two it would not).
//!
//! Any text may go through here. Most are one of a few fixed texts; a time view written
//! into the text or one condition per ref makes texts vary without bound, so a
//! connection's cache is emptied whenever it holds [`MAX_CACHED`] statements. Statements
//! whose best plan hangs on a parameter (a limit an index walk is chosen for: the vector
//! branch, listings) are sent as plain text and planned for their values.

use deadpool_postgres::{GenericClient, Object, StatementCache, Transaction};
use mnem_store::Result;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};

use crate::DbResult;

/// Where statements run: a transaction of its own, or a connection already inside one
/// (a recall's shared read, [`crate::read_scope`]). Either keeps its connection's cache.
pub trait Session: GenericClient {
    fn statements(&self) -> &StatementCache;
}

impl Session for Transaction<'_> {
    fn statements(&self) -> &StatementCache {
        &self.statement_cache
    }
}

impl Session for Object {
    fn statements(&self) -> &StatementCache {
        &self.statement_cache
    }
}

/// Statements a connection keeps prepared at most. Every fixed text of the backend fits
/// many times over; a burst of varying texts costs at most this much server memory.
const MAX_CACHED: usize = 512;

async fn statement(tx: &impl Session, sql: &str) -> Result<Statement> {
    if tx.statements().size() >= MAX_CACHED {
        // Dropping the cached statements closes them on the server.
        tx.statements().clear();
    }
    tx.prepare_cached(sql).await.db()
}

pub async fn query(
    tx: &impl Session,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>> {
    let statement = statement(tx, sql).await?;
    tx.query(&statement, params).await.db()
}

pub async fn query_one(
    tx: &impl Session,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Row> {
    let statement = statement(tx, sql).await?;
    tx.query_one(&statement, params).await.db()
}

pub async fn query_opt(
    tx: &impl Session,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<Row>> {
    let statement = statement(tx, sql).await?;
    tx.query_opt(&statement, params).await.db()
}

pub async fn execute(tx: &impl Session, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
    let statement = statement(tx, sql).await?;
    tx.execute(&statement, params).await.db()
}
