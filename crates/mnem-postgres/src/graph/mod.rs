//! The semantic layer on PostgreSQL: writes in `write`, the shared relationship reads in
//! `read`, and here the reads built on them — trace's rows (`mnem_store::trace_read` is the
//! trace itself) and the bounded discovery frontier. The same statements as the embedded
//! store's, so both answer the same.

pub mod read;
pub mod write;

use std::collections::HashMap;

use mnem_core::graph::{
    Adjacency, CitedSpan, GraphEdge, Relationship, Transition, VerificationEvent,
};
use mnem_core::signals::Support;
use mnem_core::{
    Actor, EmbeddingContract, EntityId, EvidenceId, ProfileId, RelationshipId, Timestamp,
};
use mnem_store::trace_read::TraceRows;
use mnem_store::{GraphView, Result, StoreError};
use tokio_postgres::Transaction;
use uuid::Uuid;

use crate::recall_branches::{tune_vector_scan, vector_cast};
use crate::rows::{col, parsed};
use crate::{embedding_queue, DbResult, Param};

/// One PostgreSQL transaction as `GraphRows` (in `write`) and `TraceRows` (here).
pub struct PgRows<'a, 't> {
    pub tx: &'a deadpool_postgres::Transaction<'t>,
}

fn boxed(value: impl tokio_postgres::types::ToSql + Sync + Send + 'static) -> Param {
    Box::new(value)
}

pub async fn relationship(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: RelationshipId,
    view: &GraphView,
) -> Result<Relationship> {
    read::relationships_where(
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

impl TraceRows for PgRows<'_, '_> {
    async fn relationship(
        &self,
        actor: &Actor,
        id: RelationshipId,
        view: &GraphView,
    ) -> Result<Relationship> {
        relationship(self.tx, actor, id, view).await
    }

    async fn cited_spans(
        &self,
        actor: &Actor,
        id: RelationshipId,
        view: &GraphView,
    ) -> Result<Vec<CitedSpan>> {
        let sql = format!(
            "SELECT s.evidence_id, s.span_start, s.span_end, s.quote, \
             (e.space = 'team' OR e.owner_profile_id = $3), ({}), e.source_group \
             FROM relationship_supports s \
             JOIN evidence e ON e.team_id = s.team_id AND e.evidence_id = s.evidence_id \
             WHERE s.team_id = $1 AND s.relationship_id = $2 \
             ORDER BY s.evidence_id, s.span_start",
            mnem_sql::evidence_state_expr(view.known_at)
        );
        self.tx
            .query(&sql, &[&actor.team.0, &id.0, &actor.profile.0])
            .await
            .db()?
            .iter()
            .map(|row| {
                Ok(CitedSpan {
                    evidence_id: EvidenceId(col(row, 0)?),
                    start: col::<i64>(row, 1)? as usize,
                    end: col::<i64>(row, 2)? as usize,
                    quote: col(row, 3)?,
                    visible: col(row, 4)?,
                    // Before it was recorded, evidence did not exist for this view.
                    state: col::<Option<String>>(row, 5)?
                        .as_deref()
                        .unwrap_or("erased")
                        .parse()?,
                    source_group: col(row, 6)?,
                })
            })
            .collect()
    }

    async fn verification_events(
        &self,
        actor: &Actor,
        id: RelationshipId,
        known_at: Option<Timestamp>,
        limit: usize,
    ) -> Result<Vec<VerificationEvent>> {
        self.tx
            .query(
                "SELECT verdict, confidence, verifier, rationale, at FROM verification_events \
                 WHERE team_id = $1 AND relationship_id = $2 AND at <= $3 \
                 ORDER BY seq DESC LIMIT $4",
                &[
                    &actor.team.0,
                    &id.0,
                    &known_at.map_or(i64::MAX, Timestamp::as_micros),
                    &(limit as i64),
                ],
            )
            .await
            .db()?
            .iter()
            .map(|row| {
                Ok(VerificationEvent {
                    verdict: parsed(row, 0)?,
                    confidence: col(row, 1)?,
                    verifier: col(row, 2)?,
                    rationale: col(row, 3)?,
                    at: Timestamp::from_micros(col(row, 4)?),
                })
            })
            .collect()
    }

    async fn transitions(
        &self,
        actor: &Actor,
        id: RelationshipId,
        known_at: Option<Timestamp>,
        limit: usize,
    ) -> Result<Vec<Transition>> {
        self.tx
            .query(
                "SELECT from_tier, to_tier, from_status, to_status, reason, actor_profile_id, at \
                 FROM relationship_transitions \
                 WHERE team_id = $1 AND relationship_id = $2 AND at <= $3 \
                 ORDER BY seq DESC LIMIT $4",
                &[
                    &actor.team.0,
                    &id.0,
                    &known_at.map_or(i64::MAX, Timestamp::as_micros),
                    &(limit as i64),
                ],
            )
            .await
            .db()?
            .iter()
            .map(|row| {
                Ok(Transition {
                    from_tier: col::<Option<String>>(row, 0)?
                        .map(|t| t.parse())
                        .transpose()?,
                    to_tier: parsed(row, 1)?,
                    from_status: col::<Option<String>>(row, 2)?
                        .map(|s| s.parse())
                        .transpose()?,
                    to_status: parsed(row, 3)?,
                    reason: col(row, 4)?,
                    actor: ProfileId(col(row, 5)?),
                    at: Timestamp::from_micros(col(row, 6)?),
                })
            })
            .collect()
    }

    async fn conflicts(
        &self,
        actor: &Actor,
        relationship: &Relationship,
        view: &GraphView,
        limit: usize,
    ) -> Result<Vec<Relationship>> {
        read::relationships_where(
            self.tx,
            actor,
            view,
            &format!(
                " AND r.subject_entity_id = $2 AND r.predicate = $3 AND r.relationship_id <> $4 \
                 AND (r.object_key <> $5 OR r.polarity <> $6) {conflicting} \
                 ORDER BY r.recorded_at, r.relationship_id LIMIT {limit}",
                conflicting = mnem_sql::CONFLICTING
            ),
            vec![
                boxed(relationship.subject.entity_id.0),
                boxed(relationship.predicate.clone()),
                boxed(relationship.relationship_id.0),
                boxed(relationship.object.identity_key()),
                boxed(relationship.polarity.as_str().to_string()),
            ],
        )
        .await
    }

    async fn successors(
        &self,
        actor: &Actor,
        id: RelationshipId,
        view: &GraphView,
    ) -> Result<Vec<Relationship>> {
        read::relationships_where(
            self.tx,
            actor,
            view,
            " AND r.supersedes = $2 ORDER BY r.recorded_at, r.relationship_id",
            vec![boxed(id.0)],
        )
        .await
    }
}

/// Entities whose normalised name or alias is one of `names`, at most 64.
pub async fn entities_named(
    tx: &Transaction<'_>,
    actor: &Actor,
    names: &[String],
) -> Result<Vec<(EntityId, String)>> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    tx.query(
        "SELECT DISTINCT a.entity_id, a.alias_key FROM entity_aliases a \
         WHERE a.team_id = $1 AND a.alias_key = ANY ($2) \
         ORDER BY a.entity_id LIMIT 64",
        &[&actor.team.0, &names],
    )
    .await
    .db()?
    .iter()
    .map(|row| Ok((EntityId(col(row, 0)?), col(row, 1)?)))
    .collect()
}

/// Each entity's discoverable edges, newest first, at most `fanout` (`hub` beyond).
/// One statement for all the entities (a lateral read per entity) and one supports read
/// for all their edges: a hop costs three round trips however many entities it has.
pub async fn adjacency(
    tx: &Transaction<'_>,
    actor: &Actor,
    entities: &[EntityId],
    view: &GraphView,
    fanout: usize,
) -> Result<Vec<Adjacency>> {
    if entities.is_empty() {
        return Ok(Vec::new());
    }
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
    let rows = tx.query(&sql, &[&actor.team.0, &ids]).await.db()?;
    let mut found: Vec<(EntityId, Relationship)> = Vec::with_capacity(rows.len());
    for row in &rows {
        let entity = EntityId(col(row, mnem_sql::RELATIONSHIP_COLUMNS)?);
        found.push((entity, read::relationship_from_row(row)?));
    }
    let mut distinct: Vec<Relationship> = found.iter().map(|(_, r)| r.clone()).collect();
    distinct.sort_by_key(|r| r.relationship_id);
    distinct.dedup_by_key(|r| r.relationship_id);
    let edges: HashMap<RelationshipId, GraphEdge> = read::edges(tx, actor, view, distinct)
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
    tx: &Transaction<'_>,
    actor: &Actor,
    evidence: &[EvidenceId],
    view: &GraphView,
    limit: usize,
) -> Result<Vec<GraphEdge>> {
    if evidence.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let ids: Vec<Uuid> = evidence.iter().map(|id| id.0).collect();
    let condition = format!(
        " AND r.relationship_id IN (SELECT s.relationship_id FROM relationship_supports s \
           WHERE s.team_id = $1 AND s.evidence_id = ANY ($2)) \
         {} ORDER BY r.recorded_at DESC, r.relationship_id LIMIT {limit}",
        mnem_sql::discoverable_condition(view),
    );
    let found = read::relationships_where(tx, actor, view, &condition, vec![boxed(ids)]).await?;
    read::edges(tx, actor, view, found).await
}

/// The support signal's read ([`mnem_sql::support`]) for `evidence`, in one statement.
pub async fn evidence_support(
    tx: &Transaction<'_>,
    actor: &Actor,
    evidence: &[EvidenceId],
    view: &GraphView,
) -> Result<HashMap<EvidenceId, Support>> {
    if evidence.is_empty() {
        return Ok(HashMap::new());
    }
    let ids: Vec<Uuid> = evidence.iter().map(|id| id.0).collect();
    let sql = mnem_sql::support(view, "$1", "{id} = ANY ($2)");
    let rows = tx.query(&sql, &[&actor.team.0, &ids]).await.db()?;
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
    tx: &Transaction<'_>,
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
        read::relationships_where(tx, actor, view, &condition, vec![boxed(relationship_ids)])
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
