//! Recall feedback on SQLite: records, the team's list, an item's usage.

use mnem_core::feedback::{FeedbackResult, Judgment, RecallFeedback, Usage};
use mnem_core::{Actor, EvidenceId, FeedbackId, ProfileId, Timestamp};
use mnem_store::Result;
use rusqlite::{params, Connection, Transaction};

use crate::rows::UuidBytes;
use crate::DbResult;

pub fn record(tx: &Transaction<'_>, actor: &Actor, feedback: &RecallFeedback) -> Result<()> {
    tx.execute(
        "INSERT INTO recall_feedback (team_id, feedback_id, profile_id, submitted_at, \
         ranking_profile, query) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            actor.team.as_bytes(),
            feedback.id.as_bytes(),
            feedback.actor.as_bytes(),
            feedback.at.as_micros(),
            feedback.ranking_profile,
            feedback.query,
        ],
    )
    .db()?;
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO recall_feedback_results (team_id, feedback_id, rank, evidence_id, \
             judgment) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .db()?;
    for result in &feedback.results {
        insert
            .execute(params![
                actor.team.as_bytes(),
                feedback.id.as_bytes(),
                i64::from(result.rank),
                result.evidence_id.as_bytes(),
                result.judgment.map(Judgment::as_str),
            ])
            .db()?;
    }
    Ok(())
}

pub fn list(conn: &Connection, actor: &Actor, limit: usize) -> Result<Vec<RecallFeedback>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT feedback_id, profile_id, submitted_at, ranking_profile, query \
             FROM recall_feedback WHERE team_id = ?1 \
             ORDER BY submitted_at DESC, feedback_id DESC LIMIT ?2",
        )
        .db()?;
    let heads = stmt
        .query_map(params![actor.team.as_bytes(), limit as i64], |row| {
            Ok((
                row.get::<_, UuidBytes>(0)?,
                row.get::<_, UuidBytes>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
            ))
        })
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    let mut results = conn
        .prepare_cached(
            "SELECT rank, evidence_id, judgment FROM recall_feedback_results \
             WHERE team_id = ?1 AND feedback_id = ?2 ORDER BY rank",
        )
        .db()?;
    heads
        .into_iter()
        .map(|(id, profile, at, ranking_profile, query)| {
            let rows = results
                .query_map(params![actor.team.as_bytes(), id.0], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, UuidBytes>(1)?,
                        row.get::<_, Option<String>>(2)?,
                    ))
                })
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            let results = rows
                .into_iter()
                .map(|(rank, evidence, judgment)| {
                    Ok(FeedbackResult {
                        evidence_id: EvidenceId::from_bytes(evidence.0),
                        rank: u32::try_from(rank).unwrap_or(u32::MAX),
                        judgment: judgment.map(|j| j.parse()).transpose()?,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(RecallFeedback {
                id: FeedbackId::from_bytes(id.0),
                actor: ProfileId::from_bytes(profile.0),
                at: Timestamp::from_micros(at),
                ranking_profile,
                query,
                results,
            })
        })
        .collect()
}

pub fn usage(conn: &Connection, actor: &Actor, id: EvidenceId) -> Result<Usage> {
    conn.prepare_cached(
        "SELECT COUNT(*), \
         COALESCE(SUM(judgment = 'useful'), 0), \
         COALESCE(SUM(judgment = 'not_useful'), 0), \
         COALESCE(SUM(judgment = 'wrong'), 0) \
         FROM recall_feedback_results WHERE team_id = ?1 AND evidence_id = ?2",
    )
    .db()?
    .query_row(params![actor.team.as_bytes(), id.as_bytes()], |row| {
        let count = |i| row.get::<_, i64>(i).map(|n| n.max(0) as u64);
        Ok(Usage {
            returned: count(0)?,
            useful: count(1)?,
            not_useful: count(2)?,
            wrong: count(3)?,
        })
    })
    .db()
}
