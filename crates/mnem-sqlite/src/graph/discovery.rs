//! The bounded discovery frontier's reads: entities named in a query, adjacency under
//! the view (stopping at the fan-out), edges citing returned evidence, the support
//! signal, and seeds found by meaning.

use std::collections::HashMap;

use mnem_core::graph::{Adjacency, GraphEdge};
use mnem_core::signals::Support;
use mnem_core::{Actor, EntityId, EvidenceId};
use mnem_store::{GraphView, Result, StoreError};
use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension};

use crate::ann::{AnnIndexes, Plan};
use crate::embedding_queue;
use crate::rows::UuidBytes;
use crate::DbResult;

use super::relationships::{edges, relationship_from_row, relationships_where};
use super::{blob, hex_ids};

/// Entities whose normalised name or alias is one of `names`, at most 64.
pub fn entities_named(
    conn: &Connection,
    actor: &Actor,
    names: &[String],
) -> Result<Vec<(EntityId, String)>> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    // The names travel as one JSON array: the statement text is constant, so it stays
    // prepared across recalls.
    let listed = serde_json::to_string(names).map_err(StoreError::backend)?;
    let params = vec![blob(actor.team.as_bytes()), Value::Text(listed)];
    let mut stmt = conn
        .prepare_cached(
            "SELECT DISTINCT a.entity_id, a.alias_key FROM json_each(?2) AS n \
             CROSS JOIN entity_aliases a WHERE a.team_id = ?1 AND a.alias_key = n.value \
             ORDER BY a.entity_id LIMIT 64",
        )
        .db()?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(params), |row| {
            Ok((
                EntityId::from_bytes(row.get::<_, UuidBytes>(0)?.0),
                row.get::<_, String>(1)?,
            ))
        })
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    Ok(rows)
}

/// Each entity's discoverable edges, newest first, at most `fanout` (`hub` beyond).
pub fn adjacency(
    conn: &Connection,
    actor: &Actor,
    entities: &[EntityId],
    view: &GraphView,
    fanout: usize,
) -> Result<Vec<Adjacency>> {
    // Each end is read newest first and cut at fanout + 1 inside its own index range,
    // eligibility applied before the cut; the union is cut again.
    let side = |column: &str| {
        format!(
            "SELECT relationship_id FROM (SELECT r.relationship_id FROM relationships r \
             WHERE r.team_id = ?1 AND r.{column} = ?2{eligible} \
             ORDER BY r.recorded_at DESC, r.relationship_id LIMIT {limit})",
            eligible = mnem_sql::discoverable_condition(view),
            limit = fanout + 1
        )
    };
    let condition = format!(
        " AND r.relationship_id IN ({} UNION ALL {}) \
         ORDER BY r.recorded_at DESC, r.relationship_id LIMIT {}",
        side("subject_entity_id"),
        side("object_entity_id"),
        fanout + 1
    );
    entities
        .iter()
        .map(|&entity| {
            let mut found =
                relationships_where(conn, actor, view, &condition, vec![blob(entity.as_bytes())])
                    .db()?;
            let hub = found.len() > fanout;
            found.truncate(fanout);
            Ok(Adjacency {
                entity_id: entity,
                edges: edges(conn, actor, view, found).db()?,
                hub,
            })
        })
        .collect()
}

/// Discoverable relationships supported by any of `evidence`, newest first.
pub fn edges_supported_by(
    conn: &Connection,
    actor: &Actor,
    evidence: &[EvidenceId],
    view: &GraphView,
    limit: usize,
) -> Result<Vec<GraphEdge>> {
    if evidence.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let marks = vec!["?"; evidence.len()].join(", ");
    let condition = format!(
        " AND r.relationship_id IN (SELECT s.relationship_id FROM relationship_supports s \
           WHERE s.team_id = ?1 AND s.evidence_id IN ({marks})) \
         {} ORDER BY r.recorded_at DESC, r.relationship_id LIMIT {limit}",
        mnem_sql::discoverable_condition(view),
    );
    let found = relationships_where(
        conn,
        actor,
        view,
        &condition,
        evidence.iter().map(|id| blob(id.as_bytes())).collect(),
    )
    .db()?;
    edges(conn, actor, view, found).db()
}

/// The support signal's read ([`mnem_sql::support`]) for `evidence`, in one statement.
/// The ids travel as one JSON array of hex strings, so the statement text depends only on
/// the time view and is prepared once per connection.
pub fn evidence_support(
    conn: &Connection,
    actor: &Actor,
    evidence: &[EvidenceId],
    view: &GraphView,
) -> Result<HashMap<EvidenceId, Support>> {
    if evidence.is_empty() {
        return Ok(HashMap::new());
    }
    let sql = format!(
        "WITH ids(id) AS (SELECT unhex(value) FROM json_each(?2)) {}",
        mnem_sql::support(view, "?1", "{id} IN (SELECT id FROM ids)")
    );
    let ids = hex_ids(evidence.iter().map(EvidenceId::as_bytes));
    let mut stmt = conn.prepare_cached(&sql).db()?;
    let rows = stmt
        .query_map(params![actor.team.as_bytes(), ids], |row| {
            Ok((
                row.get::<_, UuidBytes>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
            ))
        })
        .db()?;
    let mut support: HashMap<EvidenceId, Support> = HashMap::new();
    for row in rows {
        let (id, what, value) = row.db()?;
        let entry = support.entry(EvidenceId::from_bytes(id.0)).or_default();
        mnem_sql::fold_support(entry, what, value);
    }
    Ok(support)
}

/// What a seed search looks for.
pub struct SeedSearch<'a> {
    pub vector: &'a [f32],
    pub contract_key: &'a str,
    pub min_similarity: f64,
    pub limit: usize,
}

/// Entities near the query by their own discovery documents or their discoverable
/// relationships', best similarity per entity. Similarity is exact over the team's
/// current discovery vectors, or proposed by the team's vector index when `ann` is on
/// and the team has enough of them, then re-read with exact eligibility and similarity.
pub fn graph_vector_seeds(
    conn: &Connection,
    actor: &Actor,
    search: &SeedSearch<'_>,
    view: &GraphView,
    ann: Option<(&AnnIndexes, usize)>,
) -> Result<Vec<(EntityId, f64)>> {
    // More documents than seeds: several may name the same entity or be ineligible.
    let pool = search.limit * 4;
    let mut scored = match ann {
        Some((indexes, threshold)) => {
            let mut verify = |docs: &[i64]| -> rusqlite::Result<Vec<(f32, i64)>> {
                let marks = vec!["?"; docs.len()].join(", ");
                // Not cached: the IN list's length varies from call to call.
                let mut stmt = conn.prepare(&format!(
                    "SELECT doc, vector FROM graph_documents WHERE team_id = ? \
                     AND state = 'current' AND contract = ? AND doc IN ({marks})"
                ))?;
                let mut values: Vec<rusqlite::types::Value> = vec![
                    actor.team.as_bytes().to_vec().into(),
                    search.contract_key.to_string().into(),
                ];
                values.extend(docs.iter().map(|doc| rusqlite::types::Value::Integer(*doc)));
                crate::recall_branches::scored_rows(&mut stmt, values, search.vector)
            };
            match indexes
                .search(
                    conn,
                    actor.team,
                    search.contract_key,
                    threshold,
                    search.vector,
                    pool,
                    &mut verify,
                )
                .db()?
            {
                Plan::Approximate(found) => found,
                Plan::Exact => exact_graph_scan(conn, actor, search)?,
            }
        }
        None => exact_graph_scan(conn, actor, search)?,
    };
    scored.retain(|(similarity, _)| f64::from(*similarity) >= search.min_similarity);
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(pool);

    let mut target = conn
        .prepare_cached(
            "SELECT target_kind, target_id FROM graph_documents WHERE doc = ?1 AND team_id = ?2",
        )
        .db()?;
    let eligible_endpoints = format!(
        "{} AND r.relationship_id = ?{}",
        mnem_sql::select_relationships(view, "?1"),
        mnem_sql::discoverable_condition(view)
    );
    let mut endpoints = conn.prepare_cached(&eligible_endpoints).db()?;
    let mut entities: Vec<(EntityId, f64)> = Vec::new();
    for (similarity, doc) in scored {
        let similarity = f64::from(similarity);
        let (kind, id): (String, UuidBytes) = target
            .query_row(params![doc, actor.team.as_bytes()], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .db()?;
        if kind == embedding_queue::ENTITY_DOCUMENT {
            entities.push((EntityId::from_bytes(id.0), similarity));
            continue;
        }
        let relationship = endpoints
            .query_row(
                params![actor.team.as_bytes(), id.0.as_slice()],
                relationship_from_row,
            )
            .optional()
            .db()?;
        if let Some(r) = relationship {
            entities.push((r.subject.entity_id, similarity));
            if let Some(object) = r.object.entity_id() {
                entities.push((object, similarity));
            }
        }
    }
    // Best similarity per entity (already in order), ties by id.
    let mut seen = std::collections::HashSet::new();
    entities.retain(|(id, _)| seen.insert(*id));
    entities.truncate(search.limit);
    Ok(entities)
}

/// Cosine similarity of every current discovery vector of the team under the contract.
fn exact_graph_scan(
    conn: &Connection,
    actor: &Actor,
    search: &SeedSearch<'_>,
) -> Result<Vec<(f32, i64)>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT doc, vector FROM graph_documents \
             WHERE team_id = ?1 AND state = 'current' AND contract = ?2",
        )
        .db()?;
    let mut rows = stmt
        .query(params![actor.team.as_bytes(), search.contract_key])
        .db()?;
    let mut scored = Vec::new();
    while let Some(row) = rows.next().db()? {
        let doc: i64 = row.get(0).db()?;
        let blob = row
            .get_ref(1)
            .db()?
            .as_blob()
            .map_err(StoreError::backend)?;
        let similarity = crate::recall_branches::dot_blob(search.vector, blob);
        if f64::from(similarity) >= search.min_similarity {
            scored.push((similarity, doc));
        }
    }
    Ok(scored)
}
