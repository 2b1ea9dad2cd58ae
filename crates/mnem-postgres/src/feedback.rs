//! Recall feedback on PostgreSQL: records, the team's list, an item's usage.

use std::collections::HashMap;

use deadpool_postgres::Transaction;
use mnem_core::feedback::{FeedbackResult, Judgment, RecallFeedback, Usage};
use mnem_core::{Actor, EvidenceId, FeedbackId, ProfileId, Timestamp};
use mnem_store::Result;
use uuid::Uuid;

use crate::prepared;
use crate::rows::col;

pub async fn record(tx: &Transaction<'_>, actor: &Actor, feedback: &RecallFeedback) -> Result<()> {
    prepared::execute(
        tx,
        "INSERT INTO recall_feedback (team_id, feedback_id, profile_id, submitted_at, \
         ranking_profile, query) VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            &actor.team.0,
            &feedback.id.0,
            &feedback.actor.0,
            &feedback.at.as_micros(),
            &feedback.ranking_profile,
            &feedback.query,
        ],
    )
    .await?;
    let ranks: Vec<i64> = feedback.results.iter().map(|r| i64::from(r.rank)).collect();
    let ids: Vec<Uuid> = feedback.results.iter().map(|r| r.evidence_id.0).collect();
    let judgments: Vec<Option<&str>> = feedback
        .results
        .iter()
        .map(|r| r.judgment.map(Judgment::as_str))
        .collect();
    prepared::execute(
        tx,
        "INSERT INTO recall_feedback_results (team_id, feedback_id, rank, evidence_id, \
         judgment) SELECT $1, $2, r, e, j FROM unnest($3::bigint[], $4::uuid[], $5::text[]) \
         AS t(r, e, j)",
        &[&actor.team.0, &feedback.id.0, &ranks, &ids, &judgments],
    )
    .await?;
    Ok(())
}

pub async fn list(
    tx: &Transaction<'_>,
    actor: &Actor,
    limit: usize,
) -> Result<Vec<RecallFeedback>> {
    let heads = prepared::query(
        tx,
        "SELECT feedback_id, profile_id, submitted_at, ranking_profile, query \
         FROM recall_feedback WHERE team_id = $1 \
         ORDER BY submitted_at DESC, feedback_id DESC LIMIT $2",
        &[&actor.team.0, &(limit as i64)],
    )
    .await?;
    let ids: Vec<Uuid> = heads
        .iter()
        .map(|row| col::<Uuid>(row, 0))
        .collect::<Result<_>>()?;
    let rows = prepared::query(
        tx,
        "SELECT feedback_id, rank, evidence_id, judgment FROM recall_feedback_results \
         WHERE team_id = $1 AND feedback_id = ANY ($2) ORDER BY feedback_id, rank",
        &[&actor.team.0, &ids],
    )
    .await?;
    let mut results: HashMap<Uuid, Vec<FeedbackResult>> = HashMap::new();
    for row in &rows {
        let judgment: Option<String> = col(row, 3)?;
        results
            .entry(col(row, 0)?)
            .or_default()
            .push(FeedbackResult {
                rank: u32::try_from(col::<i64>(row, 1)?).unwrap_or(u32::MAX),
                evidence_id: EvidenceId(col(row, 2)?),
                judgment: judgment.map(|j| j.parse()).transpose()?,
            });
    }
    heads
        .iter()
        .map(|row| {
            let id: Uuid = col(row, 0)?;
            Ok(RecallFeedback {
                id: FeedbackId(id),
                actor: ProfileId(col(row, 1)?),
                at: Timestamp::from_micros(col(row, 2)?),
                ranking_profile: col(row, 3)?,
                query: col(row, 4)?,
                results: results.remove(&id).unwrap_or_default(),
            })
        })
        .collect()
}

pub async fn usage(tx: &Transaction<'_>, actor: &Actor, id: EvidenceId) -> Result<Usage> {
    let row = prepared::query_one(
        tx,
        "SELECT COUNT(*), \
         COUNT(*) FILTER (WHERE judgment = 'useful'), \
         COUNT(*) FILTER (WHERE judgment = 'not_useful'), \
         COUNT(*) FILTER (WHERE judgment = 'wrong') \
         FROM recall_feedback_results WHERE team_id = $1 AND evidence_id = $2",
        &[&actor.team.0, &id.0],
    )
    .await?;
    let count = |i| col::<i64>(&row, i).map(|n| n.max(0) as u64);
    Ok(Usage {
        returned: count(0)?,
        useful: count(1)?,
        not_useful: count(2)?,
        wrong: count(3)?,
    })
}
