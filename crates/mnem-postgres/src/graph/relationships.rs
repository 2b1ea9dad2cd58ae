//! Reading relationships: one column list and mapping for every read, with the time view
//! (`known_at` from the transition log, `valid_at` on the validity interval) applied in
//! SQL so a `LIMIT` never cuts a row that should have been kept. Stamps inlined into SQL
//! are integers this module formats, never input text.

use std::collections::HashMap;

use mnem_core::graph::{
    EntitySummary, GraphEdge, ObjectSummary, Polarity, Relationship, TypedValue,
};
use mnem_core::{Actor, EntityId, EvidenceId, ProfileId, RelationshipId, Timestamp};
use mnem_sql::{evidence_state_expr, select_relationships};
use mnem_store::{GraphView, Result, StoreError};
use tokio_postgres::Row;
use uuid::Uuid;

use super::boxed;
use crate::prepared::{self, Session};
use crate::rows::{col, optional_stamp, parsed};
use crate::{param_refs, Param};

pub fn relationship_from_row(row: &Row) -> Result<Relationship> {
    let object = match col::<Option<Uuid>>(row, 6)? {
        Some(id) => ObjectSummary::Entity(EntitySummary {
            entity_id: EntityId(id),
            name: col(row, 7)?,
        }),
        None => {
            let json: String = col(row, 8)?;
            let value: TypedValue = serde_json::from_str(&json).map_err(StoreError::backend)?;
            ObjectSummary::Value { value }
        }
    };
    let polarity: String = col(row, 9)?;
    Ok(Relationship {
        relationship_id: RelationshipId(col(row, 0)?),
        owner_profile_id: ProfileId(col(row, 1)?),
        subject: EntitySummary {
            entity_id: EntityId(col(row, 2)?),
            name: col(row, 3)?,
        },
        predicate: col(row, 4)?,
        predicate_surface: col(row, 5)?,
        object,
        polarity: Polarity::parse("polarity", &polarity)?,
        valid_from: optional_stamp(row, 10)?,
        valid_to: optional_stamp(row, 11)?,
        recorded_at: Timestamp::from_micros(col(row, 12)?),
        recorded_to: optional_stamp(row, 13)?,
        semantic_group_key: col(row, 14)?,
        supersedes: col::<Option<Uuid>>(row, 15)?.map(RelationshipId),
        tier: parsed(row, 16)?,
        status: parsed(row, 17)?,
        version: col(row, 18)?,
    })
}

/// Relationships matching `condition` (SQL appended after the team filter, its
/// parameters numbered from `$2`).
pub async fn relationships_where(
    tx: &impl Session,
    actor: &Actor,
    view: &GraphView,
    condition: &str,
    params: Vec<Param>,
) -> Result<Vec<Relationship>> {
    let sql = format!("{}{condition}", select_relationships(view, "$1"));
    let mut all: Vec<Param> = vec![Box::new(actor.team.0)];
    all.extend(params);
    let rows = prepared::query(tx, &sql, &param_refs(&all)).await?;
    rows.iter().map(relationship_from_row).collect()
}

/// Attaches each relationship's effective supporting evidence ids (current under the
/// view, visible to the actor) and its predicate's cardinality; drops relationships with
/// no such support.
pub async fn edges(
    tx: &impl Session,
    actor: &Actor,
    view: &GraphView,
    relationships: Vec<Relationship>,
) -> Result<Vec<GraphEdge>> {
    if relationships.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<Uuid> = relationships.iter().map(|r| r.relationship_id.0).collect();
    let sql = format!(
        "SELECT s.relationship_id, s.evidence_id FROM relationship_supports s \
         JOIN evidence e ON e.team_id = s.team_id AND e.evidence_id = s.evidence_id \
         WHERE s.team_id = $1 AND s.relationship_id = ANY ($3) \
         AND (e.space = 'team' OR e.owner_profile_id = $2) AND ({}) = 'current' \
         ORDER BY s.relationship_id, s.evidence_id",
        evidence_state_expr(view.known_at)
    );
    let mut supports: HashMap<RelationshipId, Vec<EvidenceId>> = HashMap::new();
    for row in prepared::query(tx, &sql, &[&actor.team.0, &actor.profile.0, &ids]).await? {
        let relationship = RelationshipId(col(&row, 0)?);
        let evidence = EvidenceId(col(&row, 1)?);
        let ids = supports.entry(relationship).or_default();
        if ids.last() != Some(&evidence) {
            ids.push(evidence);
        }
    }
    let predicates: Vec<String> = relationships.iter().map(|r| r.predicate.clone()).collect();
    let single_valued: HashMap<String, bool> = prepared::query(
        tx,
        "SELECT predicate, single_valued FROM predicates \
         WHERE team_id = $1 AND predicate = ANY ($2)",
        &[&actor.team.0, &predicates],
    )
    .await?
    .iter()
    .map(|row| Ok((col(row, 0)?, col(row, 1)?)))
    .collect::<Result<_>>()?;
    // A claim whose every counted support is another profile's private evidence says
    // something only that profile may see.
    Ok(relationships
        .into_iter()
        .filter_map(|relationship| {
            let evidence_ids = supports.remove(&relationship.relationship_id)?;
            Some(GraphEdge {
                evidence_ids,
                single_valued: single_valued
                    .get(&relationship.predicate)
                    .copied()
                    .unwrap_or(false),
                relationship,
            })
        })
        .collect())
}

/// One relationship of the actor's team under the view (`RelationshipNotFound` when it
/// has none by that id).
pub async fn relationship(
    tx: &impl Session,
    actor: &Actor,
    id: RelationshipId,
    view: &GraphView,
) -> Result<Relationship> {
    relationships_where(
        tx,
        actor,
        view,
        " AND r.relationship_id = $2",
        vec![boxed(id.0)],
    )
    .await?
    .pop()
    .ok_or(StoreError::RelationshipNotFound { id })
}
