//! Dreaming's hypotheses on SQLite: what a pass starts from, the hypotheses table, and
//! status as it stands (the shared SQL in `mnem_sql`).

use mnem_core::graph::{
    Hypothesis, HypothesisStatus, ModelReading, ProposedHypothesis, Relationship, SourceRef,
};
use mnem_core::{Actor, EntityId, HypothesisId, RelationshipId, Timestamp};
use mnem_store::{
    new_uuid_v7, GraphView, HypothesisFilter, HypothesisPass, HypothesisResolution, Result,
    StoreError,
};
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, Row};

use crate::graph::hex_ids;
use crate::graph::relationships::relationships_where;
use crate::rows::UuidBytes;
use crate::DbResult;

/// This backend's placeholder style, for the shared statements of `mnem_sql`.
const MARK: fn(usize) -> String = |i| format!("?{i}");

pub fn dream_inputs(conn: &Connection, actor: &Actor, limit: usize) -> Result<Vec<Relationship>> {
    relationships_where(
        conn,
        actor,
        &GraphView::default(),
        &mnem_sql::dream_inputs_condition(limit),
        Vec::new(),
    )
    .db()
}

pub fn record(
    conn: &Connection,
    actor: &Actor,
    proposed: &[ProposedHypothesis],
    now: Timestamp,
) -> Result<HypothesisPass> {
    let team = actor.team.as_bytes();
    let mut insert = conn
        .prepare_cached(mnem_sql::insert_hypothesis(MARK).as_str())
        .db()?;
    let mut added = 0;
    for (i, h) in proposed.iter().enumerate() {
        // One clock reading per pass; the offset keeps ids distinct and in order.
        let id = new_uuid_v7(now.plus_micros(i as i64));
        added += insert
            .execute(params![
                team,
                id.as_bytes(),
                h.sources[0].relationship_id.as_bytes(),
                h.sources[0].version,
                h.sources[1].relationship_id.as_bytes(),
                h.sources[1].version,
                h.subject.as_bytes(),
                h.object.as_bytes(),
                h.rule,
                h.statement,
                now.as_micros(),
            ])
            .db()?;
    }
    let staled = conn
        .execute(&mnem_sql::mark_stale_hypotheses("?1"), params![team])
        .db()?;
    Ok(HypothesisPass { added, staled })
}

pub fn list(
    conn: &Connection,
    actor: &Actor,
    filter: &HypothesisFilter,
) -> Result<Vec<Hypothesis>> {
    let mut sql = mnem_sql::select_hypotheses("?1");
    sql.push_str(&mnem_sql::hypotheses_with_status(&filter.statuses));
    let mut values = vec![Value::Blob(actor.team.as_bytes().to_vec())];
    if let Some(ids) = &filter.ids {
        values.push(Value::Text(hex_ids(ids.iter().map(HypothesisId::as_bytes))));
        let n = values.len();
        sql.push_str(&format!(
            " AND h.hypothesis_id IN (SELECT unhex(value) FROM json_each(?{n}))"
        ));
    }
    if let Some(relationships) = &filter.relationships {
        values.push(Value::Text(hex_ids(
            relationships.iter().map(RelationshipId::as_bytes),
        )));
        let n = values.len();
        sql.push_str(&mnem_sql::hypotheses_citing(
            "?1",
            &format!("{{id}} IN (SELECT unhex(value) FROM json_each(?{n}))"),
        ));
    }
    if filter.unread_by_model {
        sql.push_str(mnem_sql::HYPOTHESES_UNREAD_BY_MODEL);
    }
    sql.push_str(&mnem_sql::hypotheses_order(
        filter.team_proven,
        filter.limit,
    ));
    let mut stmt = conn.prepare(&sql).db()?;
    let rows = stmt
        .query_map(params_from_iter(values), |row| Ok(raw(row)))
        .db()?;
    rows.map(|row| hypothesis(row.db()?.db()?)).collect()
}

pub fn resolve(
    conn: &Connection,
    actor: &Actor,
    id: HypothesisId,
    resolution: &HypothesisResolution,
) -> Result<Hypothesis> {
    let confirmed_by =
        serde_json::to_string(&resolution.confirmed_by).map_err(StoreError::backend)?;
    let changed = conn
        .execute(
            &mnem_sql::resolve_hypothesis(MARK),
            params![
                actor.team.as_bytes(),
                id.as_bytes(),
                resolution.status.as_str(),
                resolution.reason,
                resolution.at.as_micros(),
                confirmed_by
            ],
        )
        .db()?;
    let filter = HypothesisFilter {
        ids: Some(vec![id]),
        limit: 1,
        ..HypothesisFilter::default()
    };
    let found = list(conn, actor, &filter)?
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

pub fn record_model_reading(
    conn: &Connection,
    actor: &Actor,
    id: HypothesisId,
    reading: &ModelReading,
) -> Result<bool> {
    let written = conn
        .execute(
            &mnem_sql::record_model_reading(MARK),
            params![
                actor.team.as_bytes(),
                id.as_bytes(),
                reading.model,
                reading.read_at.as_micros(),
                reading.statement,
                reading.plausibility
            ],
        )
        .db()?;
    Ok(written == 1)
}

/// A hypothesis row's model reading: model, read at, statement, plausibility.
type RawReading = (Option<String>, Option<i64>, Option<String>, Option<f64>);

type RawHypothesis = (
    UuidBytes,
    String,
    String,
    String,
    UuidBytes,
    i64,
    UuidBytes,
    i64,
    UuidBytes,
    UuidBytes,
    i64,
    Option<String>,
    Option<i64>,
    String,
    RawReading,
);

fn raw(row: &Row<'_>) -> rusqlite::Result<RawHypothesis> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
        row.get(7)?,
        row.get(8)?,
        row.get(9)?,
        row.get(10)?,
        row.get(11)?,
        row.get(12)?,
        row.get(13)?,
        (row.get(14)?, row.get(15)?, row.get(16)?, row.get(17)?),
    ))
}

fn hypothesis(raw: RawHypothesis) -> Result<Hypothesis> {
    let (
        id,
        statement,
        status,
        rule,
        first,
        first_version,
        second,
        second_version,
        subject,
        object,
        created_at,
        resolution,
        resolved_at,
        confirmed_by,
        (model, read_at, model_statement, plausibility),
    ) = raw;
    Ok(Hypothesis {
        hypothesis_id: HypothesisId::from_bytes(id.0),
        statement,
        status: status.parse::<HypothesisStatus>()?,
        rule,
        sources: [
            SourceRef {
                relationship_id: RelationshipId::from_bytes(first.0),
                version: first_version,
            },
            SourceRef {
                relationship_id: RelationshipId::from_bytes(second.0),
                version: second_version,
            },
        ],
        subject_entity_id: EntityId::from_bytes(subject.0),
        object_entity_id: EntityId::from_bytes(object.0),
        created_at: Timestamp::from_micros(created_at),
        resolution,
        resolved_at: resolved_at.map(Timestamp::from_micros),
        confirmed_by: serde_json::from_str(&confirmed_by).map_err(StoreError::backend)?,
        model_reading: model.zip(read_at).map(|(model, at)| ModelReading {
            model,
            read_at: Timestamp::from_micros(at),
            statement: model_statement,
            plausibility,
        }),
    })
}
