//! Mention rows (migration 0016): the keys `mnem_core::mention` derives from each stored
//! text, and the entity hop's read over them (`mnem_core::hop`).

use std::collections::HashSet;

use deadpool_postgres::Transaction;
use mnem_core::hop::MentionRead;
use mnem_core::mention::mentions;
use mnem_core::{Actor, EvidenceId, RecallQuery, Timestamp};
use mnem_store::Result;
use uuid::Uuid;

use crate::prepared::Session;
use crate::recall_branches::{evidence_columns, push_eligibility, Statement};
use crate::rows::{col, evidence_from_row, StoredTexts};
use crate::{param_refs, prepared, DbResult};

const INSERT: &str = "INSERT INTO mentions (team_id, entity_key, doc) \
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::int8[]) ON CONFLICT DO NOTHING";

/// The mention rows of texts (team, doc, content), as one array per column.
#[derive(Default)]
struct Rows {
    teams: Vec<Uuid>,
    keys: Vec<String>,
    docs: Vec<i64>,
}

impl Rows {
    fn of<'a>(texts: impl IntoIterator<Item = (Uuid, i64, &'a str)>) -> Self {
        let mut rows = Rows::default();
        for (team, doc, content) in texts {
            for key in mentions(content) {
                rows.teams.push(team);
                rows.keys.push(key);
                rows.docs.push(doc);
            }
        }
        rows
    }
}

/// Records what newly stored texts (team, doc, content) mention, in one statement.
pub(crate) async fn index(tx: &Transaction<'_>, texts: &[(Uuid, i64, &str)]) -> Result<()> {
    let rows = Rows::of(texts.iter().copied());
    if rows.keys.is_empty() {
        return Ok(());
    }
    prepared::execute(tx, INSERT, &[&rows.teams, &rows.keys, &rows.docs]).await?;
    Ok(())
}

/// Forgets what a text (about to be erased) mentions.
pub(crate) async fn unindex(tx: &Transaction<'_>, team: Uuid, doc: i64) -> Result<()> {
    prepared::execute(
        tx,
        "DELETE FROM mentions WHERE team_id = $1 AND doc = $2",
        &[&team, &doc],
    )
    .await?;
    Ok(())
}

/// Derives the mentions of every stored text (a migration's Rust step; row-level
/// security is lifted by the caller).
pub(crate) async fn index_all(tx: &tokio_postgres::Transaction<'_>) -> Result<usize> {
    let mut texts = StoredTexts::new();
    let mut indexed = 0usize;
    loop {
        let batch = texts.next(tx).await?;
        if batch.is_empty() {
            break;
        }
        let found = Rows::of(batch.iter().map(|(t, d, c)| (*t, *d, c.as_str())));
        tx.execute(INSERT, &[&found.teams, &found.keys, &found.docs])
            .await
            .db()?;
        indexed += batch.len();
        tracing::info!(indexed, "deriving the mentions of stored texts");
    }
    Ok(indexed)
}

/// For each of `keys`: how many of the team's texts mention it (counted up to
/// `max_items + 1`, which is enough to call it a hub), and, when at most `max_items` do,
/// those that are eligible for `query` at `now`; the records of those not in `known`.
/// One statement counts, one finds the eligible items on narrow rows, one reads records.
pub(crate) async fn mentioned(
    tx: &impl Session,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
    keys: &[String],
    max_items: usize,
    known: &HashSet<EvidenceId>,
) -> Result<MentionRead> {
    let counted = prepared::query(
        tx,
        "SELECT k.key, (SELECT count(*) FROM (SELECT 1 FROM mentions m \
           WHERE m.team_id = $1 AND m.entity_key = k.key LIMIT $3) c) \
         FROM unnest($2::text[]) AS k (key)",
        &[&actor.team.0, &keys, &(max_items as i64 + 1)],
    )
    .await?;
    let counts = counted
        .iter()
        .map(|row| Ok((col::<String>(row, 0)?, col::<i64>(row, 1)?.max(0) as u64)))
        .collect::<Result<Vec<_>>>()?;
    let (mut read, rare) = MentionRead::counted(counts, max_items);
    if rare.is_empty() {
        return Ok(read);
    }
    let mut stmt = Statement::default();
    let team = stmt.arg(actor.team.0);
    let wanted = stmt.arg(rare);
    stmt.sql = format!(
        "SELECT m.entity_key, e.evidence_id FROM mentions m \
         JOIN evidence e ON e.team_id = m.team_id AND e.doc = m.doc \
         WHERE m.team_id = {team} AND m.entity_key = ANY ({wanted}::text[])"
    );
    push_eligibility(&mut stmt, actor, query, now);
    let rows = prepared::query(tx, &stmt.sql, &param_refs(&stmt.params)).await?;
    let mut unknown: Vec<Uuid> = Vec::new();
    for row in &rows {
        let (key, id): (String, Uuid) = (col(row, 0)?, col(row, 1)?);
        if !known.contains(&EvidenceId(id)) {
            unknown.push(id);
        }
        if let Some(entry) = read.keys.get_mut(&key) {
            entry.eligible.push(EvidenceId(id));
        }
    }
    unknown.sort_unstable();
    unknown.dedup();
    if unknown.is_empty() {
        return Ok(read);
    }
    let records = prepared::query(
        tx,
        &format!(
            "SELECT {columns} FROM evidence e WHERE e.team_id = $1 \
             AND e.evidence_id = ANY ($2::uuid[])",
            columns = evidence_columns(query.known_at),
        ),
        &[&actor.team.0, &unknown],
    )
    .await?;
    for row in &records {
        let evidence = evidence_from_row(row)?;
        read.records.insert(evidence.id, evidence);
    }
    Ok(read)
}
