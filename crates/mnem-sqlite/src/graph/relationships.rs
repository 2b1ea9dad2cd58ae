//! Reading relationships: one column list and mapping for every read, with the time view
//! (`known_at` from the transition log, `valid_at` on the validity interval) applied in
//! SQL so a `LIMIT` never cuts a row that should have been kept.

use std::collections::HashMap;

use mnem_core::graph::{
    EntitySummary, GraphEdge, ObjectSummary, Polarity, Relationship, TypedValue,
};
use mnem_core::{Actor, EntityId, EvidenceId, ProfileId, RelationshipId, Timestamp};
use mnem_sql::{evidence_state_expr, select_relationships};
use mnem_store::{GraphView, Result, StoreError};

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row};

use super::blob;
use crate::rows::{parsed, UuidBytes};
use crate::DbResult;

fn conversion(
    index: usize,
    err: impl std::error::Error + Send + Sync + 'static,
) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(err))
}

pub fn relationship_from_row(row: &Row<'_>) -> rusqlite::Result<Relationship> {
    let object = match row.get::<_, Option<UuidBytes>>(6)? {
        Some(id) => ObjectSummary::Entity(EntitySummary {
            entity_id: EntityId::from_bytes(id.0),
            name: row.get(7)?,
        }),
        None => {
            let json: String = row.get(8)?;
            let value: TypedValue = serde_json::from_str(&json).map_err(|e| conversion(8, e))?;
            ObjectSummary::Value { value }
        }
    };
    let polarity: String = row.get(9)?;
    let stamp = |i: usize| -> rusqlite::Result<Option<Timestamp>> {
        Ok(row.get::<_, Option<i64>>(i)?.map(Timestamp::from_micros))
    };
    Ok(Relationship {
        relationship_id: RelationshipId::from_bytes(row.get::<_, UuidBytes>(0)?.0),
        owner_profile_id: ProfileId::from_bytes(row.get::<_, UuidBytes>(1)?.0),
        subject: EntitySummary {
            entity_id: EntityId::from_bytes(row.get::<_, UuidBytes>(2)?.0),
            name: row.get(3)?,
        },
        predicate: row.get(4)?,
        predicate_surface: row.get(5)?,
        object,
        polarity: Polarity::parse("polarity", &polarity).map_err(|e| conversion(9, e))?,
        valid_from: stamp(10)?,
        valid_to: stamp(11)?,
        recorded_at: Timestamp::from_micros(row.get(12)?),
        recorded_to: stamp(13)?,
        semantic_group_key: row.get(14)?,
        supersedes: row
            .get::<_, Option<UuidBytes>>(15)?
            .map(|b| RelationshipId::from_bytes(b.0)),
        tier: parsed(row, 16)?,
        status: parsed(row, 17)?,
        version: row.get(18)?,
    })
}

/// Relationships matching `condition` (SQL appended after the team filter, with its own
/// parameters numbered from 2).
pub fn relationships_where(
    conn: &Connection,
    actor: &Actor,
    view: &GraphView,
    condition: &str,
    params: Vec<Value>,
) -> rusqlite::Result<Vec<Relationship>> {
    let sql = format!("{}{condition}", select_relationships(view, "?1"));
    let mut all = vec![Value::Blob(actor.team.as_bytes().to_vec())];
    all.extend(params);
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(all), relationship_from_row)?;
    rows.collect()
}

/// Attaches each relationship's effective supporting evidence ids (current under the
/// view, visible to the actor) and its predicate's cardinality, in two reads; drops
/// relationships with no such support (for a discoverable relationship, that means its
/// support is private to another profile).
pub fn edges(
    conn: &Connection,
    actor: &Actor,
    view: &GraphView,
    relationships: Vec<Relationship>,
) -> rusqlite::Result<Vec<GraphEdge>> {
    if relationships.is_empty() {
        return Ok(Vec::new());
    }
    // Numbered from 3: ?1 and ?2 are used after the list in the text.
    let marks = (3..3 + relationships.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut params = vec![
        Value::Blob(actor.team.as_bytes().to_vec()),
        Value::Blob(actor.profile.as_bytes().to_vec()),
    ];
    params.extend(
        relationships
            .iter()
            .map(|r| Value::Blob(r.relationship_id.as_bytes().to_vec())),
    );
    let sql = format!(
        "SELECT s.relationship_id, s.evidence_id FROM relationship_supports s \
         JOIN evidence e ON e.team_id = s.team_id AND e.evidence_id = s.evidence_id \
         WHERE s.team_id = ?1 AND s.relationship_id IN ({marks}) \
         AND (e.space = 'team' OR e.owner_profile_id = ?2) AND ({}) = 'current' \
         ORDER BY s.relationship_id, s.evidence_id",
        evidence_state_expr(view.known_at)
    );
    let mut supports: HashMap<RelationshipId, Vec<EvidenceId>> = HashMap::new();
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    while let Some(row) = rows.next()? {
        let relationship = RelationshipId::from_bytes(row.get::<_, UuidBytes>(0)?.0);
        let evidence = EvidenceId::from_bytes(row.get::<_, UuidBytes>(1)?.0);
        let ids = supports.entry(relationship).or_default();
        if ids.last() != Some(&evidence) {
            ids.push(evidence);
        }
    }
    let mut single_valued: HashMap<String, bool> = HashMap::new();
    let mut cardinality = conn.prepare_cached(
        "SELECT single_valued FROM predicates WHERE team_id = ?1 AND predicate = ?2",
    )?;
    // A claim whose every counted support is another profile's private evidence says
    // something only that profile may see.
    let relationships: Vec<Relationship> = relationships
        .into_iter()
        .filter(|r| supports.contains_key(&r.relationship_id))
        .collect();
    relationships
        .into_iter()
        .map(|relationship| {
            let single = match single_valued.get(&relationship.predicate) {
                Some(&known) => known,
                None => {
                    let declared = cardinality
                        .query_row(
                            rusqlite::params![actor.team.as_bytes(), relationship.predicate],
                            |row| row.get::<_, bool>(0),
                        )
                        .optional()?
                        .unwrap_or(false);
                    single_valued.insert(relationship.predicate.clone(), declared);
                    declared
                }
            };
            Ok(GraphEdge {
                evidence_ids: supports
                    .remove(&relationship.relationship_id)
                    .unwrap_or_default(),
                relationship,
                single_valued: single,
            })
        })
        .collect()
}

/// One relationship of the actor's team under the view (`RelationshipNotFound` when it
/// has none by that id).
pub fn relationship(
    conn: &Connection,
    actor: &Actor,
    id: RelationshipId,
    view: &GraphView,
) -> Result<Relationship> {
    relationships_where(
        conn,
        actor,
        view,
        " AND r.relationship_id = ?",
        vec![blob(id.as_bytes())],
    )
    .db()?
    .pop()
    .ok_or(StoreError::RelationshipNotFound { id })
}
