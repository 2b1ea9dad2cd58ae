//! Communities on SQLite: the team's latest computation (the shared SQL in `mnem_sql`).

use mnem_core::graph::{Community, DetectedCommunity};
use mnem_core::{Actor, CommunityId, EntityId, Timestamp};
use mnem_store::{new_uuid_v7, CommunityFilter, CommunityPass, CommunityStep, Result, StoreError};
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row};

use crate::graph::hex_ids;
use crate::rows::UuidBytes;
use crate::DbResult;

/// This backend's placeholder style, for the shared statements of `mnem_sql`.
const MARK: fn(usize) -> String = |i| format!("?{i}");

pub fn record(
    conn: &Connection,
    actor: &Actor,
    found: &[DetectedCommunity],
    fingerprint: &str,
    relationships: usize,
    now: Timestamp,
) -> Result<CommunityPass> {
    let team = actor.team.as_bytes();
    let latest: Option<(i64, String)> = conn
        .query_row(
            &mnem_sql::latest_community_run("?1"),
            params![team],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
        .db()?;
    let version = match CommunityPass::plan(latest, fingerprint) {
        CommunityStep::Unchanged(pass) => return Ok(pass),
        CommunityStep::Write { version } => version,
    };
    for clear in mnem_sql::clear_communities("?1") {
        conn.execute(&clear, params![team]).db()?;
    }
    conn.execute(
        &mnem_sql::insert_community_run(MARK),
        params![
            team,
            version,
            mnem_core::graph::COMMUNITY_ALGORITHM,
            fingerprint,
            relationships as i64,
            found.len() as i64,
            now.as_micros()
        ],
    )
    .db()?;
    let mut insert = conn
        .prepare_cached(&mnem_sql::insert_community(MARK))
        .db()?;
    let mut member = conn
        .prepare_cached(&mnem_sql::insert_community_member(MARK))
        .db()?;
    for (ordinal, community) in found.iter().enumerate() {
        // One clock reading per pass; the offset keeps ids distinct and in order.
        let id = new_uuid_v7(now.plus_micros(ordinal as i64));
        insert
            .execute(params![
                team,
                id.as_bytes(),
                version,
                ordinal as i64,
                community.members.len() as i64,
                community.relationships.len() as i64,
                serde_json::to_string(&community.top_entities).map_err(StoreError::backend)?,
                serde_json::to_string(&community.top_predicates).map_err(StoreError::backend)?,
                community.summary,
            ])
            .db()?;
        for entity in &community.members {
            member
                .execute(params![team, id.as_bytes(), entity.as_bytes()])
                .db()?;
        }
    }
    Ok(CommunityPass::written(version))
}

pub fn list(conn: &Connection, actor: &Actor, filter: &CommunityFilter) -> Result<Vec<Community>> {
    let mut values = vec![Value::Blob(actor.team.as_bytes().to_vec())];
    let among = match &filter.entities {
        Some(entities) => {
            values.push(Value::Text(hex_ids(
                entities.iter().map(EntityId::as_bytes),
            )));
            Some(format!(
                "{{id}} IN (SELECT unhex(value) FROM json_each(?{}))",
                values.len()
            ))
        }
        None => None,
    };
    let sql = mnem_sql::select_communities("?1", among.as_deref(), filter.limit);
    let mut stmt = conn.prepare(&sql).db()?;
    let rows = stmt.query_map(params_from_iter(values), raw).db()?;
    rows.map(|row| Community::try_from(row.db()?)).collect()
}

fn raw(row: &Row<'_>) -> rusqlite::Result<mnem_sql::CommunityRow> {
    Ok(mnem_sql::CommunityRow {
        id: CommunityId::from_bytes(row.get::<_, UuidBytes>(0)?.0).0,
        version: row.get(1)?,
        algorithm: row.get(2)?,
        computed_at: row.get(3)?,
        entity_count: row.get(4)?,
        relationship_count: row.get(5)?,
        top_entities: row.get(6)?,
        top_predicates: row.get(7)?,
        summary: row.get(8)?,
        matched: row.get(9)?,
    })
}
