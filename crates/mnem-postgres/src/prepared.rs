//! Constant statements, prepared once per pooled connection: deadpool keeps a statement
//! cache on each connection, so later calls skip the parse round trip. Only for SQL
//! whose text never varies — a statement with values inlined would grow the cache
//! without bound (the recall and graph reads that inline a time view use `query`
//! directly).

use deadpool_postgres::Transaction;
use mnem_store::Result;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::DbResult;

pub async fn query(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>> {
    let statement = tx.prepare_cached(sql).await.db()?;
    tx.query(&statement, params).await.db()
}

pub async fn query_one(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Row> {
    let statement = tx.prepare_cached(sql).await.db()?;
    tx.query_one(&statement, params).await.db()
}

pub async fn query_opt(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<Row>> {
    let statement = tx.prepare_cached(sql).await.db()?;
    tx.query_opt(&statement, params).await.db()
}

pub async fn execute(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<u64> {
    let statement = tx.prepare_cached(sql).await.db()?;
    tx.execute(&statement, params).await.db()
}
