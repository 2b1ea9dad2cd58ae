//! Derived search state: the active embedding contract, the embedding queue (global,
//! ids only), vectors (per team, under row-level security) and branch-degradation
//! records. Nothing here is authoritative: a lost vector is re-made from evidence.
//!
//! Many servers run the embedding worker against one database. A worker claims jobs
//! with `FOR UPDATE SKIP LOCKED` and leases them, so no two workers embed the same
//! document; a crashed worker's lease runs out and the job is claimed again.

use std::collections::BTreeMap;

use mnem_core::{EmbeddingContract, EntityId, EvidenceId, RelationshipId, TeamId, Timestamp};
use mnem_store::{DocumentTarget, PendingDocument, Result, SearchFreshness, StoreError};
use tokio_postgres::{GenericClient, Transaction};
use uuid::Uuid;

use crate::prepared;
use crate::rows::col;
use crate::{set_team, DbResult};

pub const CONTRACT_KEY: &str = "embedding_contract";
pub const DEGRADATION_KEY: &str = "last_degradation";

pub const EVIDENCE_DOCUMENT: &str = "evidence";
pub const ENTITY_DOCUMENT: &str = "entity";
pub const RELATIONSHIP_DOCUMENT: &str = "relationship";

/// How long a claimed job is left to its worker before another may take it.
const LEASE_MICROS: i64 = 5 * 60 * Timestamp::MICROS_PER_SECOND;

pub async fn meta<T: serde::de::DeserializeOwned>(
    client: &impl GenericClient,
    key: &str,
) -> Result<Option<T>> {
    let row = client
        .query_opt("SELECT value FROM store_meta WHERE key = $1", &[&key])
        .await
        .db()?;
    row.map(|row| serde_json::from_str(&col::<String>(&row, 0)?).map_err(StoreError::backend))
        .transpose()
}

pub async fn set_meta<T: serde::Serialize>(
    client: &impl GenericClient,
    key: &str,
    value: &T,
) -> Result<()> {
    let text = serde_json::to_string(value).map_err(StoreError::backend)?;
    client
        .execute(
            "INSERT INTO store_meta (key, value) VALUES ($1, $2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&key, &text],
        )
        .await
        .db()?;
    Ok(())
}

pub async fn recorded_contract(client: &impl GenericClient) -> Result<Option<EmbeddingContract>> {
    meta(client, CONTRACT_KEY).await
}

pub async fn activate_contract(tx: &Transaction<'_>, contract: &EmbeddingContract) -> Result<()> {
    // Serialises two servers activating at once.
    tx.execute("LOCK TABLE store_meta IN SHARE ROW EXCLUSIVE MODE", &[])
        .await
        .db()?;
    match recorded_contract(tx).await? {
        Some(stored) if stored != *contract => Err(StoreError::ContractMismatch {
            stored: stored.to_string(),
            active: contract.to_string(),
        }),
        Some(_) => Ok(()),
        None => set_meta(tx, CONTRACT_KEY, contract).await,
    }
}

pub async fn reindex(
    tx: &Transaction<'_>,
    contract: &EmbeddingContract,
    now: Timestamp,
) -> Result<u64> {
    set_meta(tx, CONTRACT_KEY, contract).await?;
    tx.execute(
        "UPDATE /* all teams: reindex */ search_jobs SET state = 'pending', attempts = 0, \
         last_error = NULL, enqueued_at = $1, updated_at = $1, claimed_until = NULL",
        &[&now.as_micros()],
    )
    .await
    .db()
}

/// Queues (or re-queues) a document for embedding, in the writer's transaction.
pub async fn enqueue(
    tx: &deadpool_postgres::Transaction<'_>,
    team: TeamId,
    kind: &str,
    id: Uuid,
    now: Timestamp,
) -> Result<()> {
    enqueue_batch(tx, kind, &[(team, id, now)]).await
}

/// Queues several documents of one kind (team, id, when), as [`enqueue`] queues one.
pub async fn enqueue_batch(
    tx: &deadpool_postgres::Transaction<'_>,
    kind: &str,
    documents: &[(TeamId, Uuid, Timestamp)],
) -> Result<()> {
    if documents.is_empty() {
        return Ok(());
    }
    let teams: Vec<Uuid> = documents.iter().map(|(team, _, _)| team.0).collect();
    let ids: Vec<Uuid> = documents.iter().map(|(_, id, _)| *id).collect();
    let at: Vec<i64> = documents.iter().map(|(_, _, at)| at.as_micros()).collect();
    prepared::execute(
        tx,
        "INSERT INTO search_jobs (team_id, target_kind, target_id, state, enqueued_at, \
         updated_at) SELECT v.team_id, $1, v.id, 'pending', v.at, v.at \
         FROM unnest($2::uuid[], $3::uuid[], $4::bigint[]) AS v (team_id, id, at) \
         ON CONFLICT (team_id, target_kind, target_id) DO UPDATE SET state = 'pending', \
         attempts = 0, last_error = NULL, enqueued_at = excluded.enqueued_at, \
         updated_at = excluded.updated_at, claimed_until = NULL",
        &[&kind, &teams, &ids, &at],
    )
    .await?;
    Ok(())
}

/// Drops a document's job (its evidence left `current`, or its target was erased).
pub async fn dequeue(
    tx: &deadpool_postgres::Transaction<'_>,
    team: TeamId,
    kind: &str,
    id: Uuid,
) -> Result<()> {
    prepared::execute(
        tx,
        "DELETE FROM search_jobs WHERE team_id = $1 AND target_kind = $2 AND target_id = $3",
        &[&team.0, &kind, &id],
    )
    .await?;
    Ok(())
}

/// Queues (or re-queues, when its text changed) a discovery document.
pub async fn enqueue_graph_document(
    tx: &deadpool_postgres::Transaction<'_>,
    team: TeamId,
    kind: &str,
    id: Uuid,
    text: &str,
    now: Timestamp,
) -> Result<()> {
    let changed = prepared::query_opt(
        tx,
        "INSERT INTO graph_documents (team_id, target_kind, target_id, text) \
         VALUES ($1, $2, $3, $4) \
         ON CONFLICT (team_id, target_kind, target_id) DO UPDATE SET text = excluded.text \
         WHERE graph_documents.text <> excluded.text RETURNING 1",
        &[&team.0, &kind, &id, &text],
    )
    .await?;
    if changed.is_some() {
        enqueue(tx, team, kind, id, now).await?;
    }
    Ok(())
}

/// Leases up to `limit` pending jobs, evidence before discovery documents: every team's
/// oldest first, or (`team`) one team's newest first — a one-shot command's own write
/// before that team's backlog; then reads their texts team by team under each team's
/// row-level policy.
pub async fn claim_pending(
    client: &mut deadpool_postgres::Object,
    limit: usize,
    now: Timestamp,
    team: Option<TeamId>,
) -> Result<Vec<PendingDocument>> {
    let tx = crate::begin(client, None, false).await?;
    // Each form walks its index (migration 0007) in the order it claims, so a claim reads
    // about the rows it takes however long the queue is: the one statement with an
    // optional team and a computed order sorted every pending job (a claim was seen
    // running 0.62 s with 920k pending).
    let (marker, filter, order) = match team {
        None => ("/* all teams: claim */", "", "ASC"),
        Some(_) => ("", "AND team_id = $4", "DESC"),
    };
    let sql = format!(
        "WITH {marker} claimable AS ( \
            SELECT team_id, target_kind, target_id FROM search_jobs \
            WHERE state = 'pending' AND (claimed_until IS NULL OR claimed_until < $1) {filter} \
            ORDER BY (target_kind <> 'evidence'), enqueued_at {order}, target_id {order} \
            LIMIT $2 FOR UPDATE SKIP LOCKED) \
         UPDATE search_jobs j SET claimed_until = $1 + $3 FROM claimable c \
         WHERE j.team_id = c.team_id AND j.target_kind = c.target_kind \
           AND j.target_id = c.target_id \
         RETURNING j.team_id, j.target_kind, j.target_id, j.enqueued_at"
    );
    let (now_micros, limit) = (now.as_micros(), limit as i64);
    let claimed = match team {
        None => tx.query(&sql, &[&now_micros, &limit, &LEASE_MICROS]).await,
        Some(team) => {
            tx.query(&sql, &[&now_micros, &limit, &LEASE_MICROS, &team.0])
                .await
        }
    }
    .db()?;
    let mut jobs: Vec<(i64, Uuid, String, Uuid)> = claimed
        .iter()
        .map(|row| Ok((col(row, 3)?, col(row, 0)?, col(row, 1)?, col(row, 2)?)))
        .collect::<Result<_>>()?;
    let newest_first = team.is_some();
    jobs.sort_by(|a, b| {
        let key = |j: &(i64, Uuid, String, Uuid)| {
            let at = if newest_first { -j.0 } else { j.0 };
            (j.2 != EVIDENCE_DOCUMENT, at, j.3)
        };
        key(a).cmp(&key(b))
    });
    let mut by_team: BTreeMap<Uuid, Vec<(String, Uuid)>> = BTreeMap::new();
    for (_, team, kind, id) in &jobs {
        by_team.entry(*team).or_default().push((kind.clone(), *id));
    }
    let mut texts: BTreeMap<(Uuid, String, Uuid), String> = BTreeMap::new();
    for (team, targets) in by_team {
        set_team(&tx, TeamId(team)).await?;
        let (evidence, graph): (Vec<_>, Vec<_>) = targets
            .into_iter()
            .partition(|(kind, _)| kind == EVIDENCE_DOCUMENT);
        let evidence_ids: Vec<Uuid> = evidence.iter().map(|(_, id)| *id).collect();
        for row in tx
            .query(
                "SELECT evidence_id, content FROM evidence WHERE team_id = $1 \
                 AND evidence_id = ANY ($2) AND state = 'current'",
                &[&team, &evidence_ids],
            )
            .await
            .db()?
        {
            texts.insert(
                (team, EVIDENCE_DOCUMENT.into(), col(&row, 0)?),
                col(&row, 1)?,
            );
        }
        let kinds: Vec<String> = graph.iter().map(|(kind, _)| kind.clone()).collect();
        let ids: Vec<Uuid> = graph.iter().map(|(_, id)| *id).collect();
        for row in tx
            .query(
                "SELECT g.target_kind, g.target_id, g.text FROM graph_documents g \
                 JOIN unnest($2::text[], $3::uuid[]) AS w (kind, id) \
                   ON g.target_kind = w.kind AND g.target_id = w.id \
                 WHERE g.team_id = $1",
                &[&team, &kinds, &ids],
            )
            .await
            .db()?
        {
            texts.insert((team, col(&row, 0)?, col(&row, 1)?), col(&row, 2)?);
        }
    }
    // A job whose evidence is no longer current (or whose target is gone) is dropped.
    let mut documents = Vec::with_capacity(jobs.len());
    for (_, team, kind, id) in jobs {
        match texts.remove(&(team, kind.clone(), id)) {
            Some(text) => documents.push(PendingDocument {
                team: TeamId(team),
                target: target(&kind, id)?,
                text,
            }),
            None => dequeue(&tx, TeamId(team), &kind, id).await?,
        }
    }
    tx.commit().await.db()?;
    Ok(documents)
}

fn target(kind: &str, id: Uuid) -> Result<DocumentTarget> {
    match kind {
        EVIDENCE_DOCUMENT => Ok(DocumentTarget::Evidence(EvidenceId(id))),
        ENTITY_DOCUMENT => Ok(DocumentTarget::Entity(EntityId(id))),
        RELATIONSHIP_DOCUMENT => Ok(DocumentTarget::Relationship(RelationshipId(id))),
        other => Err(StoreError::Backend(
            format!("unknown search document kind `{other}`").into(),
        )),
    }
}

fn kind_and_id(target: &DocumentTarget) -> (&'static str, Uuid) {
    match target {
        DocumentTarget::Evidence(id) => (EVIDENCE_DOCUMENT, id.0),
        DocumentTarget::Entity(id) => (ENTITY_DOCUMENT, id.0),
        DocumentTarget::Relationship(id) => (RELATIONSHIP_DOCUMENT, id.0),
    }
}

/// Stores vectors team by team, a few set-based statements per team (vectors travel as
/// pgvector's text form, which round-trips f32 exactly), and marks their jobs current.
pub async fn store_vectors(
    tx: &impl crate::prepared::Session,
    contract: &EmbeddingContract,
    vectors: &[(PendingDocument, Vec<f32>)],
    now: Timestamp,
) -> Result<()> {
    let key = contract.key();
    let dims = contract.dims as i32;
    let mut by_team: BTreeMap<Uuid, Vec<(&'static str, Uuid, String)>> = BTreeMap::new();
    for (doc, vector) in vectors {
        let (kind, id) = kind_and_id(&doc.target);
        by_team
            .entry(doc.team.0)
            .or_default()
            .push((kind, id, vector_text(vector)));
    }
    for (team, documents) in by_team {
        set_team(tx, TeamId(team)).await?;
        let (evidence, graph): (Vec<_>, Vec<_>) = documents
            .into_iter()
            .partition(|(kind, _, _)| *kind == EVIDENCE_DOCUMENT);
        let ids: Vec<Uuid> = evidence.iter().map(|(_, id, _)| *id).collect();
        let texts: Vec<String> = evidence.into_iter().map(|(_, _, text)| text).collect();
        // A document erased while it was being embedded stays erased.
        let mut stored: Vec<(String, Uuid)> = Vec::new();
        for row in tx
            .query(
                "INSERT INTO evidence_vectors (team_id, evidence_id, contract, dims, embedding) \
                 SELECT $1, v.id, $3, $4, v.embedding::vector \
                 FROM unnest($2::uuid[], $5::text[]) AS v (id, embedding) \
                 WHERE EXISTS (SELECT 1 FROM evidence e WHERE e.team_id = $1 \
                   AND e.evidence_id = v.id AND e.state <> 'erased') \
                 ON CONFLICT (team_id, evidence_id) DO UPDATE SET contract = excluded.contract, \
                 dims = excluded.dims, embedding = excluded.embedding RETURNING evidence_id",
                &[&team, &ids, &key, &dims, &texts],
            )
            .await
            .db()?
        {
            stored.push((EVIDENCE_DOCUMENT.into(), col(&row, 0)?));
        }
        let kinds: Vec<&str> = graph.iter().map(|(kind, _, _)| *kind).collect();
        let ids: Vec<Uuid> = graph.iter().map(|(_, id, _)| *id).collect();
        let texts: Vec<String> = graph.into_iter().map(|(_, _, text)| text).collect();
        for row in tx
            .query(
                "UPDATE graph_documents g SET contract = $4, dims = $5, \
                 embedding = v.embedding::vector \
                 FROM unnest($2::text[], $3::uuid[], $6::text[]) AS v (kind, id, embedding) \
                 WHERE g.team_id = $1 AND g.target_kind = v.kind AND g.target_id = v.id \
                 RETURNING g.target_kind, g.target_id",
                &[&team, &kinds, &ids, &key, &dims, &texts],
            )
            .await
            .db()?
        {
            stored.push((col(&row, 0)?, col(&row, 1)?));
        }
        let kinds: Vec<String> = stored.iter().map(|(kind, _)| kind.clone()).collect();
        let ids: Vec<Uuid> = stored.iter().map(|(_, id)| *id).collect();
        tx.execute(
            "UPDATE search_jobs j SET state = 'current', last_error = NULL, updated_at = $4, \
             claimed_until = NULL FROM unnest($2::text[], $3::uuid[]) AS v (kind, id) \
             WHERE j.team_id = $1 AND j.target_kind = v.kind AND j.target_id = v.id",
            &[&team, &kinds, &ids, &now.as_micros()],
        )
        .await
        .db()?;
    }
    Ok(())
}

/// pgvector's text form, `[x,y,…]`; Rust prints each f32 in its shortest exact form.
fn vector_text(vector: &[f32]) -> String {
    let parts: Vec<String> = vector.iter().map(f32::to_string).collect();
    format!("[{}]", parts.join(","))
}

pub async fn record_failures(
    tx: &Transaction<'_>,
    failures: &[(PendingDocument, String)],
    max_attempts: u32,
    now: Timestamp,
) -> Result<()> {
    for (doc, error) in failures {
        let (kind, id) = kind_and_id(&doc.target);
        tx.execute(
            "UPDATE search_jobs SET attempts = attempts + 1, last_error = $4, updated_at = $5, \
             claimed_until = NULL, \
             state = CASE WHEN attempts + 1 >= $6 THEN 'failed' ELSE 'pending' END \
             WHERE team_id = $1 AND target_kind = $2 AND target_id = $3",
            &[
                &doc.team.0,
                &kind,
                &id,
                error,
                &now.as_micros(),
                &i64::from(max_attempts),
            ],
        )
        .await
        .db()?;
    }
    Ok(())
}

/// Evidence documents by state (jobs of evidence that left `current` are dropped, so
/// these count current evidence only, as the embedded store does).
pub async fn freshness(client: &impl GenericClient, now: Timestamp) -> Result<SearchFreshness> {
    let row = client
        .query_one(
            "SELECT /* all teams: freshness */ \
               COUNT(*) FILTER (WHERE state = 'pending'), \
               COUNT(*) FILTER (WHERE state = 'failed'), \
               COUNT(*) FILTER (WHERE state = 'current'), \
               MIN(enqueued_at) FILTER (WHERE state = 'pending') \
             FROM search_jobs WHERE target_kind = 'evidence'",
            &[],
        )
        .await
        .db()?;
    let oldest: Option<i64> = col(&row, 3)?;
    Ok(SearchFreshness {
        pending_document_count: col::<i64>(&row, 0)? as u64,
        failed_document_count: col::<i64>(&row, 1)? as u64,
        current_document_count: col::<i64>(&row, 2)? as u64,
        oldest_pending_age_seconds: oldest
            .map(|t| (now.as_micros() - t).max(0) / Timestamp::MICROS_PER_SECOND),
    })
}
