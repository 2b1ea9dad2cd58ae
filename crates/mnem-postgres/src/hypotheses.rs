//! Dreaming's hypotheses on PostgreSQL: what a pass starts from, the hypotheses table,
//! and status as it stands (the shared SQL in `mnem_sql`), under the team policy.

use deadpool_postgres::Transaction;
use mnem_core::graph::{Hypothesis, ModelReading, ProposedHypothesis, Relationship, SourceRef};
use mnem_core::{Actor, EntityId, HypothesisId, RelationshipId, Timestamp};
use mnem_store::{
    new_uuid_v7, GraphView, HypothesisFilter, HypothesisPass, HypothesisResolution, Result,
    StoreError,
};
use tokio_postgres::Row;
use uuid::Uuid;

use crate::graph::relationships::relationships_where;
use crate::rows::{col, parsed};
use crate::{param_refs, DbResult, Param};

/// This backend's placeholder style, for the shared statements of `mnem_sql`.
const MARK: fn(usize) -> String = |i| format!("${i}");

pub async fn dream_inputs(
    tx: &Transaction<'_>,
    actor: &Actor,
    limit: usize,
) -> Result<Vec<Relationship>> {
    relationships_where(
        tx,
        actor,
        &GraphView::default(),
        &mnem_sql::dream_inputs_condition(limit),
        Vec::new(),
    )
    .await
}

pub async fn record(
    tx: &Transaction<'_>,
    actor: &Actor,
    proposed: &[ProposedHypothesis],
    now: Timestamp,
) -> Result<HypothesisPass> {
    let insert = tx.prepare(&mnem_sql::insert_hypothesis(MARK)).await.db()?;
    let mut added = 0;
    for (i, h) in proposed.iter().enumerate() {
        // One clock reading per pass; the offset keeps ids distinct and in order.
        let id = new_uuid_v7(now.plus_micros(i as i64));
        added += tx
            .execute(
                &insert,
                &[
                    &actor.team.0,
                    &id,
                    &h.sources[0].relationship_id.0,
                    &h.sources[0].version,
                    &h.sources[1].relationship_id.0,
                    &h.sources[1].version,
                    &h.subject.0,
                    &h.object.0,
                    &h.rule,
                    &h.statement,
                    &now.as_micros(),
                ],
            )
            .await
            .db()?;
    }
    let staled = tx
        .execute(&mnem_sql::mark_stale_hypotheses("$1"), &[&actor.team.0])
        .await
        .db()?;
    Ok(HypothesisPass {
        added: added as usize,
        staled: staled as usize,
    })
}

pub async fn list(
    tx: &Transaction<'_>,
    actor: &Actor,
    filter: &HypothesisFilter,
) -> Result<Vec<Hypothesis>> {
    let mut sql = mnem_sql::select_hypotheses("$1");
    sql.push_str(&mnem_sql::hypotheses_with_status(&filter.statuses));
    let mut params: Vec<Param> = vec![Box::new(actor.team.0)];
    if let Some(ids) = &filter.ids {
        params.push(Box::new(ids.iter().map(|i| i.0).collect::<Vec<Uuid>>()));
        sql.push_str(&format!(" AND h.hypothesis_id = ANY (${})", params.len()));
    }
    if let Some(relationships) = &filter.relationships {
        params.push(Box::new(
            relationships.iter().map(|r| r.0).collect::<Vec<Uuid>>(),
        ));
        let n = params.len();
        sql.push_str(&mnem_sql::hypotheses_citing(
            "$1",
            &format!("{{id}} = ANY (${n})"),
        ));
    }
    if filter.unread_by_model {
        sql.push_str(mnem_sql::HYPOTHESES_UNREAD_BY_MODEL);
    }
    sql.push_str(&mnem_sql::hypotheses_order(
        filter.team_proven,
        filter.limit,
    ));
    let rows = tx.query(&sql, &param_refs(&params)).await.db()?;
    rows.iter().map(hypothesis).collect()
}

pub async fn resolve(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: HypothesisId,
    resolution: &HypothesisResolution,
) -> Result<Hypothesis> {
    let confirmed_by =
        serde_json::to_string(&resolution.confirmed_by).map_err(StoreError::backend)?;
    let changed = tx
        .execute(
            &mnem_sql::resolve_hypothesis(MARK),
            &[
                &actor.team.0,
                &id.0,
                &resolution.status.as_str(),
                &resolution.reason,
                &resolution.at.as_micros(),
                &confirmed_by,
            ],
        )
        .await
        .db()?;
    let filter = HypothesisFilter {
        ids: Some(vec![id]),
        limit: 1,
        ..HypothesisFilter::default()
    };
    let found = list(tx, actor, &filter)
        .await?
        .pop()
        .ok_or(StoreError::HypothesisNotFound { id })?;
    if changed == 0 {
        return Err(StoreError::Conflict(format!(
            "hypothesis {id} is {}, not open",
            found.status
        )));
    }
    Ok(found)
}

pub async fn record_model_reading(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: HypothesisId,
    reading: &ModelReading,
) -> Result<bool> {
    let written = tx
        .execute(
            &mnem_sql::record_model_reading(MARK),
            &[
                &actor.team.0,
                &id.0,
                &reading.model,
                &reading.read_at.as_micros(),
                &reading.statement,
                &reading.plausibility,
            ],
        )
        .await
        .db()?;
    Ok(written == 1)
}

fn hypothesis(row: &Row) -> Result<Hypothesis> {
    let confirmed_by: String = col(row, 13)?;
    Ok(Hypothesis {
        hypothesis_id: HypothesisId(col(row, 0)?),
        statement: col(row, 1)?,
        status: parsed(row, 2)?,
        rule: col(row, 3)?,
        sources: [
            SourceRef {
                relationship_id: RelationshipId(col(row, 4)?),
                version: col(row, 5)?,
            },
            SourceRef {
                relationship_id: RelationshipId(col(row, 6)?),
                version: col(row, 7)?,
            },
        ],
        subject_entity_id: EntityId(col(row, 8)?),
        object_entity_id: EntityId(col(row, 9)?),
        created_at: Timestamp::from_micros(col(row, 10)?),
        resolution: col(row, 11)?,
        resolved_at: col::<Option<i64>>(row, 12)?.map(Timestamp::from_micros),
        confirmed_by: serde_json::from_str(&confirmed_by).map_err(StoreError::backend)?,
        model_reading: col::<Option<String>>(row, 14)?
            .zip(col::<Option<i64>>(row, 15)?)
            .map(|(model, at)| -> Result<ModelReading> {
                Ok(ModelReading {
                    model,
                    read_at: Timestamp::from_micros(at),
                    statement: col(row, 16)?,
                    plausibility: col(row, 17)?,
                })
            })
            .transpose()?,
    })
}
