//! Mapping between rows and domain types. Stored vocabularies are parsed strictly: a
//! value this build does not know is a corrupt row, not a default.

use std::str::FromStr;

use mnem_core::{Evidence, EvidenceId, ProfileId, Ref, Scope, TeamId, Timestamp};
use mnem_store::{Result, StoreError};
use tokio_postgres::types::FromSql;
use tokio_postgres::Row;

/// Columns read by [`evidence_from_row`], in order, from `evidence e`. With a time view,
/// `e.state` is replaced by the state as of then.
pub const EVIDENCE_COLUMNS: &str = mnem_sql::evidence_columns!("e.content");
pub use mnem_sql::EVIDENCE_COLUMN_COUNT;

/// One column, its conversion failure a backend error naming the column.
pub fn col<'a, T: FromSql<'a>>(row: &'a Row, index: usize) -> Result<T> {
    row.try_get(index).map_err(StoreError::backend)
}

/// A text column parsed into a stored vocabulary.
pub fn parsed<T: FromStr>(row: &Row, index: usize) -> Result<T>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    col::<String>(row, index)?
        .parse()
        .map_err(StoreError::backend)
}

fn json<T: serde::de::DeserializeOwned>(row: &Row, index: usize) -> Result<T> {
    serde_json::from_str(&col::<String>(row, index)?).map_err(StoreError::backend)
}

fn stamp(row: &Row, index: usize) -> Result<Option<Timestamp>> {
    Ok(col::<Option<i64>>(row, index)?.map(Timestamp::from_micros))
}

pub fn evidence_from_row(row: &Row) -> Result<Evidence> {
    let scope = Scope::parse(&col::<String>(row, 13)?)?;
    Ok(Evidence {
        id: EvidenceId(col(row, 0)?),
        team: TeamId(col(row, 1)?),
        owner: ProfileId(col(row, 2)?),
        content: col(row, 3)?,
        kind: col(row, 4)?,
        source_type: parsed(row, 5)?,
        source: col(row, 6)?,
        authority: parsed(row, 7)?,
        source_group: col(row, 8)?,
        source_key: col(row, 9)?,
        source_revision: col(row, 10)?,
        labels: json(row, 11)?,
        refs: json::<Vec<Ref>>(row, 12)?,
        scope,
        space: parsed(row, 14)?,
        observed_at: Timestamp::from_micros(col(row, 15)?),
        recorded_at: Timestamp::from_micros(col(row, 16)?),
        expires_at: stamp(row, 17)?,
        content_hash: col(row, 18)?,
        state: parsed(row, 19)?,
    })
}

pub fn optional_stamp(row: &Row, index: usize) -> Result<Option<Timestamp>> {
    stamp(row, index)
}

/// One stored text as the migrations' derivation steps read it: team, doc, content.
pub type StoredText = (uuid::Uuid, i64, String);

/// Every team's non-empty stored texts, read in batches in `(team_id, doc)` order over
/// that index (a keyset walk, so a batch never re-reads or skips a row): the one reader
/// the migration steps that derive rows from stored texts share.
pub struct StoredTexts {
    after: (uuid::Uuid, i64),
}

impl StoredTexts {
    const BATCH: i64 = 2_000;

    pub fn new() -> Self {
        Self {
            after: (uuid::Uuid::nil(), i64::MIN),
        }
    }

    /// The next batch, empty once every text was read.
    pub async fn next(&mut self, tx: &tokio_postgres::Transaction<'_>) -> Result<Vec<StoredText>> {
        let rows = tx
            .query(
                "SELECT team_id, doc, content FROM evidence \
                 WHERE (team_id, doc) > ($1, $2) AND content <> '' \
                 ORDER BY team_id, doc LIMIT $3",
                &[&self.after.0, &self.after.1, &Self::BATCH],
            )
            .await
            .map_err(StoreError::backend)?;
        let texts: Vec<StoredText> = rows
            .iter()
            .map(|row| Ok((col(row, 0)?, col(row, 1)?, col(row, 2)?)))
            .collect::<Result<_>>()?;
        if let Some((team, doc, _)) = texts.last() {
            self.after = (*team, *doc);
        }
        Ok(texts)
    }
}
