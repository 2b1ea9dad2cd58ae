//! Versioned schema migrations, recorded in `mnem_schema`. Every process runs them at
//! start; an advisory lock makes concurrent starts take turns, and each migration commits
//! with its version, so a crash leaves the database at a whole version. A database
//! written by a newer build is refused rather than guessed at.

use mnem_store::{Result, StoreError};
use tokio_postgres::{Config, NoTls};

use crate::DbResult;

/// Index `i` holds the migration that takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_term_frequencies.sql"),
    include_str!("migrations/0003_source_groups.sql"),
    include_str!("migrations/0004_admin_keys.sql"),
    include_str!("migrations/0005_core_terms.sql"),
    include_str!("migrations/0006_statement_term_stats.sql"),
    include_str!("migrations/0007_claim_order_indexes.sql"),
    include_str!("migrations/0008_evidence_writes.sql"),
    include_str!("migrations/0009_recall_feedback.sql"),
    include_str!("migrations/0010_hypotheses.sql"),
    include_str!("migrations/0011_communities.sql"),
    include_str!("migrations/0012_hypothesis_model_readings.sql"),
    include_str!("migrations/0013_lexical_blocks.sql"),
    include_str!("migrations/0014_reference_tables.sql"),
    include_str!("migrations/0015_irregular_forms.sql"),
    include_str!("migrations/0016_mentions.sql"),
    include_str!("migrations/0017_vectors_by_team.sql"),
];

/// Texts whose terms the version-5 backfill derives per statement.
const BACKFILL_BATCH: i64 = 1000;

pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Any constant shared by every mnem process: the key of the migration lock.
const MIGRATION_LOCK: i64 = 0x6d6e_656d_0001;

/// Migrates as the login role (the owner of what it creates), on its own connection.
pub async fn migrate(config: &Config) -> Result<()> {
    migrate_to(config, SCHEMA_VERSION).await
}

/// Migrates up to `version` only: how the tests make a database an older build left.
pub(crate) async fn migrate_to(config: &Config, version: i64) -> Result<()> {
    as_owner(config, |client| {
        Box::pin(async move {
            client
                .batch_execute(
                    "CREATE TABLE IF NOT EXISTS mnem_schema (version bigint NOT NULL); \
                     CREATE EXTENSION IF NOT EXISTS vector;",
                )
                .await
                .db()?;
            apply(client, version).await
        })
    })
    .await
}

/// The HNSW indexes for vectors of one width: a partial index per table over the cast
/// expression (`vector(n)`, or `halfvec(n)` past pgvector's 2,000-dimension limit), made
/// when a contract of that width is activated; both tables are partitioned by team
/// (migration 17), one graph a partition. Cosine distance: vectors are unit length.
pub async fn ensure_vector_indexes(config: &Config, dims: usize) -> Result<()> {
    let sql = vector_index_sql(dims);
    as_owner(config, |client| {
        Box::pin(async move { client.batch_execute(&sql).await.db() })
    })
    .await
}

fn vector_index_sql(dims: usize) -> String {
    let cast = crate::recall_branches::vector_cast(dims);
    let ops = if dims > 2000 {
        "halfvec_cosine_ops"
    } else {
        "vector_cosine_ops"
    };
    format!(
        "CREATE INDEX IF NOT EXISTS evidence_vectors_hnsw_{dims} ON evidence_vectors \
           USING hnsw ((embedding::{cast}) {ops}) WHERE dims = {dims}; \
         CREATE INDEX IF NOT EXISTS graph_documents_hnsw_{dims} ON graph_documents \
           USING hnsw ((embedding::{cast}) {ops}) WHERE dims = {dims};"
    )
}

/// Drops the HNSW indexes for vectors of one width, before a bulk load of vectors:
/// pgvector inserts into an HNSW graph one row at a time (~2 ms a vector here, growing
/// with the graph) and builds one from a loaded table several times faster
/// ([`build_vector_indexes`]). Until the build, the vector branch scans: exact, slower.
pub async fn drop_vector_indexes(config: &Config, dims: usize) -> Result<()> {
    let sql = format!(
        "DROP INDEX IF EXISTS evidence_vectors_hnsw_{dims}; \
         DROP INDEX IF EXISTS graph_documents_hnsw_{dims};"
    );
    as_owner(config, |client| {
        Box::pin(async move { client.batch_execute(&sql).await.db() })
    })
    .await
}

/// Builds the HNSW indexes for vectors of one width after a bulk load, with
/// `maintenance_memory` (a PostgreSQL size, e.g. `2GB`) for the build: pgvector builds
/// in memory while the graph fits, and far slower once it does not.
pub async fn build_vector_indexes(
    config: &Config,
    dims: usize,
    maintenance_memory: &str,
) -> Result<()> {
    let memory = maintenance_memory.to_owned();
    let sql = vector_index_sql(dims);
    as_owner(config, |client| {
        Box::pin(async move {
            client
                .execute(
                    "SELECT set_config('maintenance_work_mem', $1, false)",
                    &[&memory],
                )
                .await
                .db()?;
            client.batch_execute(&sql).await.db()
        })
    })
    .await
}

/// Refreshes the planner's statistics (after a bulk load; autovacuum does it later on
/// its own). Needs the tables' owner, so it runs as the login role.
pub async fn analyze(config: &Config) -> Result<()> {
    as_owner(config, |client| {
        Box::pin(async move { client.batch_execute("ANALYZE").await.db() })
    })
    .await
}

type OwnerWork<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + 'a>>;

/// Runs schema work on a fresh connection as the login role, holding the migration lock
/// so concurrent server starts take turns.
async fn as_owner<F>(config: &Config, work: F) -> Result<()>
where
    F: for<'a> FnOnce(&'a mut tokio_postgres::Client) -> OwnerWork<'a>,
{
    let (mut client, connection) = config.connect(NoTls).await.db()?;
    let driver = tokio::spawn(connection);
    let outcome = async {
        client
            .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
            .await
            .db()?;
        let result = work(&mut client).await;
        client
            .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
            .await
            .db()?;
        result
    }
    .await;
    drop(client);
    let _ = driver.await;
    outcome
}

async fn apply(client: &mut tokio_postgres::Client, target: i64) -> Result<()> {
    let found: i64 = client
        .query_one("SELECT COALESCE(MAX(version), 0) FROM mnem_schema", &[])
        .await
        .db()?
        .try_get(0)
        .map_err(StoreError::backend)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (index, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target as usize)
        .skip(found as usize)
    {
        let tx = client.transaction().await.db()?;
        tx.batch_execute(sql).await.db()?;
        let version = index as i64 + 1;
        if version == 5 {
            backfill_terms(&tx).await?;
        }
        if version == 13 {
            backfill_blocks(&tx).await?;
        }
        if version == 15 {
            reindex_terms(&tx).await?;
        }
        if version == 16 {
            derive_mentions(&tx).await?;
        }
        if version == 17 {
            rebuild_vector_indexes(&tx).await?;
        }
        tx.execute("INSERT INTO mnem_schema (version) VALUES ($1)", &[&version])
            .await
            .db()?;
        tx.commit().await.db()?;
        tracing::info!(version = index + 1, "postgres schema migrated");
    }
    Ok(())
}

/// Migration 13's Rust step: the block posting lists of every stored text.
async fn backfill_blocks(tx: &tokio_postgres::Transaction<'_>) -> Result<()> {
    without_row_security(tx, &["evidence", "lexical_blocks"], true).await?;
    let indexed = crate::lexical::index_all(tx).await?;
    without_row_security(tx, &["evidence", "lexical_blocks"], false).await?;
    tracing::info!(indexed, "full-text index rebuilt as block posting lists");
    Ok(())
}

/// Migration 15's Rust step: every stored text's terms derived again (the statistics
/// trigger is off, see the SQL), the statistics recounted from them as the insert trigger
/// counts a statement, and the block posting lists rebuilt.
async fn reindex_terms(tx: &tokio_postgres::Transaction<'_>) -> Result<()> {
    backfill_terms(tx).await?;
    const TABLES: [&str; 4] = ["evidence", "text_stats", "term_stats", "lexical_blocks"];
    without_row_security(tx, &TABLES, true).await?;
    tx.batch_execute(
        "INSERT INTO text_stats (team_id, documents, lexemes) \
           SELECT team_id, count(*), sum(text_length) FROM evidence \
           WHERE text_length > 0 GROUP BY team_id; \
         INSERT INTO term_stats (team_id, lexeme, documents, max_frequency, min_length) \
           SELECT e.team_id, k, count(*), max((e.term_freqs ->> k)::bigint), \
                  min(e.text_length) \
           FROM evidence e, jsonb_object_keys(e.term_freqs) AS k \
           WHERE e.text_length > 0 GROUP BY e.team_id, k; \
         ALTER TABLE evidence ENABLE TRIGGER evidence_term_stats_change;",
    )
    .await
    .db()?;
    let indexed = crate::lexical::index_all(tx).await?;
    without_row_security(tx, &TABLES, false).await?;
    tracing::info!(indexed, "full-text index rebuilt with irregular word forms");
    Ok(())
}

/// Migration 16's Rust step: the mentions of every stored text.
async fn derive_mentions(tx: &tokio_postgres::Transaction<'_>) -> Result<()> {
    without_row_security(tx, &["evidence", "mentions"], true).await?;
    let indexed = crate::mentions::index_all(tx).await?;
    without_row_security(tx, &["evidence", "mentions"], false).await?;
    tracing::info!(indexed, "mentions derived from the stored texts");
    Ok(())
}

/// Migration 17's Rust step: the HNSW indexes of every width stored, made again on the
/// partitioned tables (each partition gets its own graph).
async fn rebuild_vector_indexes(tx: &tokio_postgres::Transaction<'_>) -> Result<()> {
    const TABLES: [&str; 2] = ["evidence_vectors", "graph_documents"];
    without_row_security(tx, &TABLES, true).await?;
    let widths: Vec<i32> = tx
        .query(
            "SELECT dims FROM evidence_vectors \
             UNION SELECT dims FROM graph_documents WHERE dims IS NOT NULL ORDER BY 1",
            &[],
        )
        .await
        .db()?
        .iter()
        .map(|row| row.try_get(0).map_err(StoreError::backend))
        .collect::<Result<_>>()?;
    for &dims in &widths {
        let dims = usize::try_from(dims).map_err(StoreError::backend)?;
        tx.batch_execute(&vector_index_sql(dims)).await.db()?;
    }
    without_row_security(tx, &TABLES, false).await?;
    tracing::info!(?widths, "vector indexes made again, one graph a partition");
    Ok(())
}

/// Lifts (`lifted`) or restores row-level security on `tables` inside a migration's
/// transaction: the owner has no team.
async fn without_row_security(
    tx: &tokio_postgres::Transaction<'_>,
    tables: &[&str],
    lifted: bool,
) -> Result<()> {
    for table in tables {
        let sql = if lifted {
            format!(
                "ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY; \
                 ALTER TABLE {table} DISABLE ROW LEVEL SECURITY;"
            )
        } else {
            format!(
                "ALTER TABLE {table} ENABLE ROW LEVEL SECURITY; \
                 ALTER TABLE {table} FORCE ROW LEVEL SECURITY;"
            )
        };
        tx.batch_execute(&sql).await.db()?;
    }
    Ok(())
}

/// Migration 5's Rust step: every stored text's terms and length from mnem's analyzer
/// (which SQL cannot run), in batches; the statistics triggers count them as they land.
/// Row-level security is lifted inside this transaction only, as the owner has no team.
async fn backfill_terms(tx: &tokio_postgres::Transaction<'_>) -> Result<()> {
    const TABLES: [&str; 3] = ["evidence", "text_stats", "term_stats"];
    without_row_security(tx, &TABLES, true).await?;
    let mut after: Option<(uuid::Uuid, uuid::Uuid)> = None;
    let mut indexed = 0usize;
    loop {
        let rows = match after {
            None => {
                tx.query(
                    "SELECT team_id, evidence_id, content FROM evidence WHERE content <> '' \
                     ORDER BY team_id, evidence_id LIMIT $1",
                    &[&BACKFILL_BATCH],
                )
                .await
            }
            Some((team, id)) => {
                tx.query(
                    "SELECT team_id, evidence_id, content FROM evidence WHERE content <> '' \
                     AND (team_id, evidence_id) > ($1, $2) \
                     ORDER BY team_id, evidence_id LIMIT $3",
                    &[&team, &id, &BACKFILL_BATCH],
                )
                .await
            }
        }
        .db()?;
        let Some(last) = rows.last() else {
            break;
        };
        after = Some((
            last.try_get(0).map_err(StoreError::backend)?,
            last.try_get(1).map_err(StoreError::backend)?,
        ));
        let (mut teams, mut ids, mut freqs, mut lengths) = (vec![], vec![], vec![], vec![]);
        for row in &rows {
            let content: String = row.try_get(2).map_err(StoreError::backend)?;
            let terms = mnem_core::lexical::document_terms(&content);
            teams.push(
                row.try_get::<_, uuid::Uuid>(0)
                    .map_err(StoreError::backend)?,
            );
            ids.push(
                row.try_get::<_, uuid::Uuid>(1)
                    .map_err(StoreError::backend)?,
            );
            freqs.push(terms.frequencies_json());
            lengths.push(i64::from(terms.length));
        }
        tx.execute(
            "UPDATE evidence e SET term_freqs = v.freqs::jsonb, text_length = v.length \
             FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::bigint[]) \
               AS v (team_id, evidence_id, freqs, length) \
             WHERE e.team_id = v.team_id AND e.evidence_id = v.evidence_id",
            &[&teams, &ids, &freqs, &lengths],
        )
        .await
        .db()?;
        indexed += rows.len();
        if indexed.is_multiple_of(10 * BACKFILL_BATCH as usize) {
            tracing::info!(indexed, "re-deriving stored texts' terms");
        }
    }
    without_row_security(tx, &TABLES, false).await?;
    tracing::info!(indexed, "full-text terms re-derived with mnem's analyzer");
    Ok(())
}
