//! Versioned schema migrations keyed on `PRAGMA user_version`. Each migration runs in its
//! own transaction together with the version bump, so a crash leaves the file at a whole
//! version. A file written by a newer build is refused rather than guessed at.

use mnem_store::{Result, StoreError};
use rusqlite::Connection;

use crate::DbResult;

/// Index `i` holds the migration that takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_search_documents.sql"),
    include_str!("migrations/0003_graph.sql"),
    include_str!("migrations/0004_graph_documents.sql"),
    include_str!("migrations/0005_api_keys.sql"),
    include_str!("migrations/0006_source_groups.sql"),
    include_str!("migrations/0007_admin_keys.sql"),
    include_str!("migrations/0008_vector_changes.sql"),
];

pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub fn migrate(conn: &mut Connection) -> Result<()> {
    let found: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .db()?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let tx = conn.transaction().db()?;
        tx.execute_batch(sql).db()?;
        tx.pragma_update(None, "user_version", index as i64 + 1)
            .db()?;
        tx.commit().db()?;
    }
    Ok(())
}
