//! The bounded discovery frontier's reads: entities named in a query, adjacency under
//! the view (stopping at the fan-out), edges citing returned evidence, the support
//! signal, and seeds found by meaning.

use std::collections::HashMap;

use mnem_core::graph::{Adjacency, GraphEdge, Relationship};
use mnem_core::signals::Support;
use mnem_core::{Actor, EmbeddingContract, EntityId, EvidenceId, RelationshipId};
use mnem_store::{GraphView, Result};
use uuid::Uuid;

use crate::prepared::{self, Session};
use crate::recall_branches::{tune_vector_scan, vector_cast};
use crate::rows::col;
use crate::{embedding_queue, DbResult};

use super::boxed;
use super::relationships::{edges, relationship_from_row, relationships_where};

/// Entities whose normalised name or alias is one of `names`, at most 64.
pub async fn entities_named(
    tx: &impl Session,
    actor: &Actor,
    names: &[String],
) -> Result<Vec<(EntityId, String)>> {
    prepared::query(
        tx,
        "SELECT DISTINCT a.entity_id, a.alias_key FROM entity_aliases a \
         WHERE a.team_id = $1 AND a.alias_key = ANY ($2) \
         ORDER BY a.entity_id LIMIT 64",
        &[&actor.team.0, &names],
    )
    .await?
    .iter()
    .map(|row| Ok((EntityId(col(row, 0)?), col(row, 1)?)))
    .collect()
}

/// Each entity's discoverable edges, newest first, at most `fanout` (`hub` beyond).
/// One statement for all the entities (a lateral read per entity) and one supports read
/// for all their edges: a hop costs three round trips however many entities it has.
pub async fn adjacency(
    tx: &impl Session,
    actor: &Actor,
    entities: &[EntityId],
    view: &GraphView,
    fanout: usize,
) -> Result<Vec<Adjacency>> {
    // Each end is read newest first and cut at fanout + 1 inside its own index range,
    // eligibility applied before the cut; the union is cut again.
    let limit = fanout + 1;
    let side = |column: &str| {
        format!(
            "(SELECT r.relationship_id FROM relationships r \
             WHERE r.team_id = $1 AND r.{column} = q.entity_id{eligible} \
             ORDER BY r.recorded_at DESC, r.relationship_id LIMIT {limit})",
            eligible = mnem_sql::discoverable_condition(view),
        )
    };
    let sql = format!(
        "SELECT x.*, q.entity_id FROM unnest($2::uuid[]) WITH ORDINALITY AS q(entity_id, ord) \
         CROSS JOIN LATERAL ({select} AND r.relationship_id IN ({subject} UNION ALL {object}) \
         ORDER BY r.recorded_at DESC, r.relationship_id LIMIT {limit}) x \
         ORDER BY q.ord, x.recorded_at DESC, x.relationship_id",
        select = mnem_sql::select_relationships(view, "$1"),
        subject = side("subject_entity_id"),
        object = side("object_entity_id"),
    );
    // Each entity once in the statement, so its rows are its own edges exactly once.
    let mut ids: Vec<Uuid> = Vec::with_capacity(entities.len());
    for entity in entities {
        if !ids.contains(&entity.0) {
            ids.push(entity.0);
        }
    }
    let rows = prepared::query(tx, &sql, &[&actor.team.0, &ids]).await?;
    let mut found: Vec<(EntityId, Relationship)> = Vec::with_capacity(rows.len());
    for row in &rows {
        let entity = EntityId(col(row, mnem_sql::RELATIONSHIP_COLUMNS)?);
        found.push((entity, relationship_from_row(row)?));
    }
    let mut distinct: Vec<Relationship> = found.iter().map(|(_, r)| r.clone()).collect();
    distinct.sort_by_key(|r| r.relationship_id);
    distinct.dedup_by_key(|r| r.relationship_id);
    let edges: HashMap<RelationshipId, GraphEdge> = edges(tx, actor, view, distinct)
        .await?
        .into_iter()
        .map(|edge| (edge.relationship.relationship_id, edge))
        .collect();
    Ok(entities
        .iter()
        .map(|&entity| {
            let mine: Vec<RelationshipId> = found
                .iter()
                .filter(|(e, _)| *e == entity)
                .map(|(_, r)| r.relationship_id)
                .collect();
            Adjacency {
                entity_id: entity,
                hub: mine.len() > fanout,
                edges: mine
                    .iter()
                    .take(fanout)
                    .filter_map(|id| edges.get(id).cloned())
                    .collect(),
            }
        })
        .collect())
}

/// Discoverable relationships supported by any of `evidence`, newest first.
pub async fn edges_supported_by(
    tx: &impl Session,
    actor: &Actor,
    evidence: &[EvidenceId],
    view: &GraphView,
    limit: usize,
) -> Result<Vec<GraphEdge>> {
    let ids: Vec<Uuid> = evidence.iter().map(|id| id.0).collect();
    let condition = format!(
        " AND r.relationship_id IN (SELECT s.relationship_id FROM relationship_supports s \
           WHERE s.team_id = $1 AND s.evidence_id = ANY ($2)) \
         {} ORDER BY r.recorded_at DESC, r.relationship_id LIMIT {limit}",
        mnem_sql::discoverable_condition(view),
    );
    let found = relationships_where(tx, actor, view, &condition, vec![boxed(ids)]).await?;
    edges(tx, actor, view, found).await
}

/// The support signal's read ([`mnem_sql::support`]) for `evidence`, in one statement.
pub async fn evidence_support(
    tx: &impl Session,
    actor: &Actor,
    evidence: &[EvidenceId],
    view: &GraphView,
) -> Result<HashMap<EvidenceId, Support>> {
    let ids: Vec<Uuid> = evidence.iter().map(|id| id.0).collect();
    let sql = mnem_sql::support(view, "$1", "{id} = ANY ($2)");
    let rows = prepared::query(tx, &sql, &[&actor.team.0, &ids]).await?;
    let mut support: HashMap<EvidenceId, Support> = HashMap::new();
    for row in rows {
        let id: Uuid = col(&row, 0)?;
        let what: i32 = col(&row, 1)?;
        let value: i64 = col(&row, 2)?;
        let entry = support.entry(EvidenceId(id)).or_default();
        mnem_sql::fold_support(entry, i64::from(what), value);
    }
    Ok(support)
}

/// What a seed search looks for.
pub struct SeedSearch<'a> {
    pub vector: &'a [f32],
    pub contract: &'a EmbeddingContract,
    pub min_similarity: f64,
    pub limit: usize,
    /// Compare every discovery vector instead of walking the index.
    pub exact: bool,
}

/// Entities near the query by their own discovery documents or their discoverable
/// relationships', best similarity per entity; eligibility is read exactly for the few
/// documents above the floor.
pub async fn graph_vector_seeds(
    tx: &impl Session,
    actor: &Actor,
    search: &SeedSearch<'_>,
    view: &GraphView,
) -> Result<Vec<(EntityId, f64)>> {
    if search.vector.len() != search.contract.dims {
        return Ok(Vec::new());
    }
    // More documents than seeds: several may name the same entity or be ineligible.
    let pool = search.limit * 4;
    tune_vector_scan(tx, pool).await?;
    let distance = if search.exact {
        "(g.embedding <=> $3)".to_string()
    } else {
        let cast = vector_cast(search.contract.dims);
        format!("(g.embedding::{cast} <=> $3::{cast})")
    };
    let sql = format!(
        "WITH nearest AS MATERIALIZED ( \
           SELECT g.target_kind, g.target_id, {distance} AS distance FROM graph_documents g \
           WHERE g.team_id = $1 AND g.contract = $2 AND g.dims = {dims} \
           ORDER BY distance LIMIT $4) \
         SELECT target_kind, target_id, (1 - distance)::float8 FROM nearest \
         WHERE 1 - distance >= $5 ORDER BY distance, target_id",
        dims = search.contract.dims,
    );
    // Not prepared: a generic plan cannot see the limit an index walk is chosen for.
    let found = tx
        .query(
            &sql,
            &[
                &actor.team.0,
                &search.contract.key(),
                &pgvector::Vector::from(search.vector.to_vec()),
                &(pool as i64),
                &search.min_similarity,
            ],
        )
        .await
        .db()?;
    let mut documents = Vec::with_capacity(found.len());
    for row in &found {
        let kind: String = col(row, 0)?;
        let id: Uuid = col(row, 1)?;
        let similarity: f64 = col(row, 2)?;
        documents.push((kind == embedding_queue::ENTITY_DOCUMENT, id, similarity));
    }
    // The relationship documents' endpoints, read in one statement (eligible ones only).
    let relationship_ids: Vec<Uuid> = documents
        .iter()
        .filter(|(is_entity, _, _)| !is_entity)
        .map(|(_, id, _)| *id)
        .collect();
    let endpoints: HashMap<Uuid, Relationship> = if relationship_ids.is_empty() {
        HashMap::new()
    } else {
        let condition = format!(
            " AND r.relationship_id = ANY ($2){}",
            mnem_sql::discoverable_condition(view)
        );
        relationships_where(tx, actor, view, &condition, vec![boxed(relationship_ids)])
            .await?
            .into_iter()
            .map(|r| (r.relationship_id.0, r))
            .collect()
    };
    let mut entities: Vec<(EntityId, f64)> = Vec::new();
    for (is_entity, id, similarity) in documents {
        if is_entity {
            entities.push((EntityId(id), similarity));
        } else if let Some(r) = endpoints.get(&id) {
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
