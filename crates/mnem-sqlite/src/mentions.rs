//! Mention rows (migration 0017): the keys `mnem_core::mention` derives from each stored
//! text, and the entity hop's read over them (`mnem_core::hop`).

use std::collections::HashSet;

use mnem_core::hop::MentionRead;
use mnem_core::mention::mentions;
use mnem_core::{Actor, EvidenceId, RecallQuery, TeamId, Timestamp};
use rusqlite::types::Value;
use rusqlite::{params, Connection};

use crate::recall_branches::{push_eligibility, records, Statement};
use crate::rows::UuidBytes;

/// Records what a newly stored text mentions.
pub(crate) fn index(
    conn: &Connection,
    team: TeamId,
    doc: i64,
    content: &str,
) -> rusqlite::Result<()> {
    let mut insert = conn.prepare_cached(
        "INSERT OR IGNORE INTO mentions (team_id, entity_key, doc) VALUES (?1, ?2, ?3)",
    )?;
    for key in mentions(content) {
        insert.execute(params![team.as_bytes(), key, doc])?;
    }
    Ok(())
}

/// Forgets what a text (about to be erased) mentions.
pub(crate) fn unindex(conn: &Connection, doc: i64) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM mentions WHERE doc = ?1")?
        .execute([doc])?;
    Ok(())
}

/// Derives the mentions of every stored text (a migration's Rust step).
pub(crate) fn index_all(conn: &Connection) -> rusqlite::Result<usize> {
    let mut texts = conn.prepare(
        "SELECT e.team_id, e.doc, t.content FROM evidence e \
         JOIN evidence_content t ON t.doc = e.doc WHERE t.content <> ''",
    )?;
    let rows = texts.query_map([], |row| {
        Ok((
            row.get::<_, Vec<u8>>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, String>(2)?,
        ))
    })?;
    let mut insert = conn
        .prepare("INSERT OR IGNORE INTO mentions (team_id, entity_key, doc) VALUES (?1, ?2, ?3)")?;
    let mut indexed = 0;
    for row in rows {
        let (team, doc, content) = row?;
        for key in mentions(&content) {
            insert.execute(params![team, key, doc])?;
        }
        indexed += 1;
    }
    Ok(indexed)
}

/// For each of `keys`: how many of the team's texts mention it (counted up to
/// `max_items + 1`, which is enough to call it a hub), and, when at most `max_items` do,
/// those that are eligible for `query` at `now`; the records of those not in `known`.
/// One statement counts, one finds the eligible items on narrow rows, one reads records.
pub(crate) fn mentioned(
    conn: &Connection,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
    keys: &[String],
    max_items: usize,
    known: &HashSet<EvidenceId>,
) -> rusqlite::Result<MentionRead> {
    let team = actor.team.as_bytes();
    let listed = serde_json::to_string(keys)
        .map_err(|err| rusqlite::Error::ToSqlConversionFailure(Box::new(err)))?;
    let mut count = conn.prepare_cached(
        "SELECT k.value, (SELECT count(*) FROM (SELECT 1 FROM mentions \
           WHERE team_id = ?1 AND entity_key = k.value LIMIT ?3)) \
         FROM json_each(?2) AS k",
    )?;
    let counted = count.query_map(params![team, listed, max_items as i64 + 1], |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
    })?;
    let counts = counted
        .map(|row| row.map(|(key, items)| (key, items.max(0) as u64)))
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let (mut read, rare) = MentionRead::counted(counts, max_items);
    if rare.is_empty() {
        return Ok(read);
    }
    let rare = serde_json::to_string(&rare)
        .map_err(|err| rusqlite::Error::ToSqlConversionFailure(Box::new(err)))?;
    let mut stmt = Statement {
        // CROSS JOIN keeps the mention rows outside: left to itself the planner walks
        // the team's evidence and probes mentions by doc (10 ms on 500 long turns). The
        // keys travel as one JSON array, so the text does not vary with their number and
        // the statement stays prepared.
        sql: "SELECT m.entity_key, e.doc, e.evidence_id FROM json_each(?) AS k \
              CROSS JOIN mentions m CROSS JOIN evidence e ON e.doc = m.doc \
              WHERE m.team_id = ? AND m.entity_key = k.value"
            .to_string(),
        params: vec![Value::Text(rare), Value::Blob(team.to_vec())],
    };
    push_eligibility(&mut stmt, actor, query, now);
    let mut prepared = conn.prepare_cached(&stmt.sql)?;
    let found = prepared.query_map(rusqlite::params_from_iter(stmt.params), |row| {
        let id: UuidBytes = row.get(2)?;
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, i64>(1)?,
            EvidenceId::from_bytes(id.0),
        ))
    })?;
    let mut unknown: Vec<i64> = Vec::new();
    for row in found {
        let (key, doc, id) = row?;
        if !known.contains(&id) {
            unknown.push(doc);
        }
        if let Some(entry) = read.keys.get_mut(&key) {
            entry.eligible.push(id);
        }
    }
    unknown.sort_unstable();
    unknown.dedup();
    read.records = records(conn, &unknown, query.known_at)?
        .into_values()
        .map(|evidence| (evidence.id, evidence))
        .collect();
    Ok(read)
}
