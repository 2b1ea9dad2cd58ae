//! Communities on PostgreSQL: the team's latest computation (the shared SQL in
//! `mnem_sql`), under the team policy.

use deadpool_postgres::Transaction;
use mnem_core::graph::{Community, DetectedCommunity};
use mnem_core::{Actor, Timestamp};
use mnem_store::{new_uuid_v7, CommunityFilter, CommunityPass, CommunityStep, Result, StoreError};
use tokio_postgres::Row;
use uuid::Uuid;

use crate::rows::col;
use crate::{param_refs, DbResult, Param};

/// This backend's placeholder style, for the shared statements of `mnem_sql`.
const MARK: fn(usize) -> String = |i| format!("${i}");

/// Runs under the team's graph lock (the caller's), so two servers' passes number their
/// versions one after the other.
pub async fn record(
    tx: &Transaction<'_>,
    actor: &Actor,
    found: &[DetectedCommunity],
    fingerprint: &str,
    relationships: usize,
    now: Timestamp,
) -> Result<CommunityPass> {
    let team = actor.team.0;
    let latest = tx
        .query_opt(&mnem_sql::latest_community_run("$1"), &[&team])
        .await
        .db()?;
    let latest: Option<(i64, String)> = match latest {
        Some(row) => Some((col(&row, 0)?, col(&row, 1)?)),
        None => None,
    };
    let version = match CommunityPass::plan(latest, fingerprint) {
        CommunityStep::Unchanged(pass) => return Ok(pass),
        CommunityStep::Write { version } => version,
    };
    for clear in mnem_sql::clear_communities("$1") {
        tx.execute(&clear, &[&team]).await.db()?;
    }
    tx.execute(
        &mnem_sql::insert_community_run(MARK),
        &[
            &team,
            &version,
            &mnem_core::graph::COMMUNITY_ALGORITHM,
            &fingerprint,
            &(relationships as i64),
            &(found.len() as i64),
            &now.as_micros(),
        ],
    )
    .await
    .db()?;
    let insert = tx.prepare(&mnem_sql::insert_community(MARK)).await.db()?;
    let mut ids = Vec::with_capacity(found.len());
    for (ordinal, community) in found.iter().enumerate() {
        // One clock reading per pass; the offset keeps ids distinct and in order.
        let id = new_uuid_v7(now.plus_micros(ordinal as i64));
        tx.execute(
            &insert,
            &[
                &team,
                &id,
                &version,
                &(ordinal as i64),
                &(community.members.len() as i64),
                &(community.relationships.len() as i64),
                &serde_json::to_string(&community.top_entities).map_err(StoreError::backend)?,
                &serde_json::to_string(&community.top_predicates).map_err(StoreError::backend)?,
                &community.summary,
            ],
        )
        .await
        .db()?;
        ids.push(id);
    }
    // Members set-based: one statement, however many communities.
    let (communities, entities): (Vec<Uuid>, Vec<Uuid>) = found
        .iter()
        .zip(&ids)
        .flat_map(|(c, id)| c.members.iter().map(move |m| (*id, m.0)))
        .unzip();
    tx.execute(
        "INSERT INTO community_members (team_id, community_id, entity_id) \
         SELECT $1, c, e FROM unnest($2::uuid[], $3::uuid[]) AS m (c, e)",
        &[&team, &communities, &entities],
    )
    .await
    .db()?;
    Ok(CommunityPass::written(version))
}

pub async fn list(
    tx: &Transaction<'_>,
    actor: &Actor,
    filter: &CommunityFilter,
) -> Result<Vec<Community>> {
    let mut params: Vec<Param> = vec![Box::new(actor.team.0)];
    let among = match &filter.entities {
        Some(entities) => {
            params.push(Box::new(
                entities.iter().map(|e| e.0).collect::<Vec<Uuid>>(),
            ));
            Some(format!("{{id}} = ANY (${})", params.len()))
        }
        None => None,
    };
    let sql = mnem_sql::select_communities("$1", among.as_deref(), filter.limit);
    let rows = tx.query(&sql, &param_refs(&params)).await.db()?;
    rows.iter()
        .map(|row| Community::try_from(community_row(row)?))
        .collect()
}

fn community_row(row: &Row) -> Result<mnem_sql::CommunityRow> {
    Ok(mnem_sql::CommunityRow {
        id: col(row, 0)?,
        version: col(row, 1)?,
        algorithm: col(row, 2)?,
        computed_at: col(row, 3)?,
        entity_count: col(row, 4)?,
        relationship_count: col(row, 5)?,
        top_entities: col(row, 6)?,
        top_predicates: col(row, 7)?,
        summary: col(row, 8)?,
        matched: col(row, 9)?,
    })
}
