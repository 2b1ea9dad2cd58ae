//! Derived search state: the active embedding contract, the embedding queue and its
//! vectors, and branch-degradation records. Nothing here is authoritative: a lost vector
//! is re-made from evidence.

use mnem_core::{EmbeddingContract, EntityId, EvidenceId, RelationshipId, TeamId, Timestamp};
use mnem_store::{
    Degradation, DocumentTarget, PendingDocument, Result, SearchFreshness, StoreError,
};
use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::rows::UuidBytes;
use crate::DbResult;

const CONTRACT_KEY: &str = "embedding_contract";
const DEGRADATION_KEY: &str = "last_degradation";

fn meta<T: serde::de::DeserializeOwned>(conn: &Connection, key: &str) -> Result<Option<T>> {
    let text: Option<String> = conn
        .query_row(
            "SELECT value FROM store_meta WHERE key = ?1",
            params![key],
            |row| row.get(0),
        )
        .optional()
        .db()?;
    text.map(|t| serde_json::from_str(&t).map_err(StoreError::backend))
        .transpose()
}

fn set_meta<T: serde::Serialize>(conn: &Connection, key: &str, value: &T) -> Result<()> {
    let text = serde_json::to_string(value).map_err(StoreError::backend)?;
    conn.execute(
        "INSERT INTO store_meta (key, value) VALUES (?1, ?2) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![key, text],
    )
    .db()?;
    Ok(())
}

pub fn recorded_contract(conn: &Connection) -> Result<Option<EmbeddingContract>> {
    meta(conn, CONTRACT_KEY)
}

pub fn activate_contract(tx: &Transaction<'_>, contract: &EmbeddingContract) -> Result<()> {
    match recorded_contract(tx)? {
        Some(stored) if stored != *contract => Err(StoreError::ContractMismatch {
            stored: stored.to_string(),
            active: contract.to_string(),
        }),
        Some(_) => Ok(()),
        None => set_meta(tx, CONTRACT_KEY, contract),
    }
}

pub fn reindex(tx: &Transaction<'_>, contract: &EmbeddingContract, now: Timestamp) -> Result<u64> {
    set_meta(tx, CONTRACT_KEY, contract)?;
    let mut queued = 0;
    for table in ["search_documents", "graph_documents"] {
        queued += tx
            .execute(
                &format!(
                    "UPDATE {table} SET state = 'pending', attempts = 0, last_error = NULL, \
                     enqueued_at = ?1, updated_at = ?1 WHERE state <> 'erased'"
                ),
                params![now.as_micros()],
            )
            .db()?;
    }
    Ok(queued as u64)
}

/// Queues a new evidence document for embedding, in the writer's transaction.
pub fn enqueue(tx: &Connection, doc: i64, team: TeamId, now: Timestamp) -> Result<()> {
    tx.execute(
        "INSERT INTO search_documents (doc, team_id, state, enqueued_at, updated_at) \
         VALUES (?1, ?2, 'pending', ?3, ?3)",
        params![doc, team.as_bytes(), now.as_micros()],
    )
    .db()?;
    Ok(())
}

pub fn pending_documents(conn: &Connection, limit: usize) -> Result<Vec<PendingDocument>> {
    pending(conn, limit, None)
}

/// One team's pending documents, newest first: what a one-shot command just wrote comes
/// before the team's older backlog, and no other team's is touched.
pub fn team_pending_documents(
    conn: &Connection,
    team: TeamId,
    limit: usize,
) -> Result<Vec<PendingDocument>> {
    pending(conn, limit, Some(team))
}

/// Pending evidence documents, then discovery documents: every team's oldest first, or
/// one team's newest first.
fn pending(conn: &Connection, limit: usize, team: Option<TeamId>) -> Result<Vec<PendingDocument>> {
    let (evidence_team, graph_team, order) = match team {
        None => ("", "", "ASC"),
        Some(_) => (" AND e.team_id = ?2", " AND team_id = ?2", "DESC"),
    };
    let team_param = team.map(|t| t.as_bytes().to_vec()).unwrap_or_default();
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT e.team_id, e.evidence_id, t.content FROM search_documents sd \
             JOIN evidence e ON e.doc = sd.doc \
             JOIN evidence_content t ON t.doc = sd.doc AND t.team_id = e.team_id \
             WHERE sd.state = 'pending' AND e.state = 'current'{evidence_team} \
             ORDER BY sd.enqueued_at {order}, sd.doc {order} LIMIT ?1"
        ))
        .db()?;
    let evidence_row = |row: &rusqlite::Row<'_>| {
        Ok(PendingDocument {
            team: TeamId::from_bytes(row.get::<_, UuidBytes>(0)?.0),
            target: DocumentTarget::Evidence(EvidenceId::from_bytes(row.get::<_, UuidBytes>(1)?.0)),
            text: row.get(2)?,
        })
    };
    let mut documents = match team {
        None => stmt.query_map(params![limit as i64], evidence_row),
        Some(_) => stmt.query_map(params![limit as i64, team_param], evidence_row),
    }
    .db()?
    .collect::<rusqlite::Result<Vec<_>>>()
    .db()?;
    let room = limit.saturating_sub(documents.len());
    if room > 0 {
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT team_id, target_kind, target_id, text FROM graph_documents \
                 WHERE state = 'pending'{graph_team} \
                 ORDER BY enqueued_at {order}, doc {order} LIMIT ?1"
            ))
            .db()?;
        let graph_row = |row: &rusqlite::Row<'_>| {
            let kind: String = row.get(1)?;
            let id = row.get::<_, UuidBytes>(2)?.0;
            let target = if kind == ENTITY_DOCUMENT {
                DocumentTarget::Entity(EntityId::from_bytes(id))
            } else {
                DocumentTarget::Relationship(RelationshipId::from_bytes(id))
            };
            Ok(PendingDocument {
                team: TeamId::from_bytes(row.get::<_, UuidBytes>(0)?.0),
                target,
                text: row.get(3)?,
            })
        };
        let graph = match team {
            None => stmt.query_map(params![room as i64], graph_row),
            Some(_) => stmt.query_map(params![room as i64, team_param], graph_row),
        }
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
        documents.extend(graph);
    }
    Ok(documents)
}

pub const ENTITY_DOCUMENT: &str = "entity";
pub const RELATIONSHIP_DOCUMENT: &str = "relationship";

const EVIDENCE_DOC: &str = "(SELECT doc FROM evidence WHERE team_id = ?1 AND evidence_id = ?2)";

/// Where a pending document's outcome is written: its table, and a condition on
/// ?1 = team and ?2 = id (the target kind is one of this module's constants, never input).
fn document_row(target: &DocumentTarget) -> (&'static str, String, [u8; 16]) {
    let graph = |kind: &str| format!("team_id = ?1 AND target_id = ?2 AND target_kind = '{kind}'");
    match target {
        DocumentTarget::Evidence(id) => (
            "search_documents",
            format!("doc = {EVIDENCE_DOC}"),
            *id.as_bytes(),
        ),
        DocumentTarget::Entity(id) => ("graph_documents", graph(ENTITY_DOCUMENT), *id.as_bytes()),
        DocumentTarget::Relationship(id) => (
            "graph_documents",
            graph(RELATIONSHIP_DOCUMENT),
            *id.as_bytes(),
        ),
    }
}

pub fn store_vectors(
    tx: &Transaction<'_>,
    contract: &EmbeddingContract,
    vectors: &[(PendingDocument, Vec<f32>)],
    now: Timestamp,
) -> Result<()> {
    let key = contract.key();
    for (doc, vector) in vectors {
        let (table, condition, id) = document_row(&doc.target);
        let blob: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        tx.prepare_cached(&format!(
            "UPDATE {table} SET state = 'current', contract = ?3, vector = ?4, \
             last_error = NULL, updated_at = ?5 WHERE {condition} AND state <> 'erased'"
        ))
        .db()?
        .execute(params![doc.team.as_bytes(), id, key, blob, now.as_micros()])
        .db()?;
    }
    Ok(())
}

pub fn record_failures(
    tx: &Transaction<'_>,
    failures: &[(PendingDocument, String)],
    max_attempts: u32,
    now: Timestamp,
) -> Result<()> {
    for (doc, error) in failures {
        let (table, condition, id) = document_row(&doc.target);
        tx.prepare_cached(&format!(
            "UPDATE {table} SET attempts = attempts + 1, last_error = ?3, updated_at = ?4, \
             state = CASE WHEN attempts + 1 >= ?5 THEN 'failed' ELSE 'pending' END \
             WHERE {condition} AND state <> 'erased'"
        ))
        .db()?
        .execute(params![
            doc.team.as_bytes(),
            id,
            error,
            now.as_micros(),
            max_attempts
        ])
        .db()?;
    }
    Ok(())
}

/// Queues (or re-queues, when its text changed) a discovery document.
pub fn enqueue_graph_document(
    tx: &Connection,
    team: TeamId,
    kind: &str,
    id: &[u8; 16],
    text: &str,
    now: Timestamp,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO graph_documents (team_id, target_kind, target_id, text, state, \
         enqueued_at, updated_at) VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?5) \
         ON CONFLICT (team_id, target_kind, target_id) DO UPDATE SET text = excluded.text, \
         state = 'pending', attempts = 0, last_error = NULL, enqueued_at = excluded.enqueued_at, \
         updated_at = excluded.updated_at \
         WHERE graph_documents.text <> excluded.text AND graph_documents.state <> 'erased'",
    )
    .db()?
    .execute(params![team.as_bytes(), kind, id, text, now.as_micros()])
    .db()?;
    Ok(())
}

pub fn freshness(conn: &Connection, now: Timestamp) -> Result<SearchFreshness> {
    conn.query_row(
        "SELECT \
           COALESCE(SUM(sd.state = 'pending'), 0), \
           COALESCE(SUM(sd.state = 'failed'), 0), \
           COALESCE(SUM(sd.state = 'current'), 0), \
           MIN(CASE WHEN sd.state = 'pending' THEN sd.enqueued_at END) \
         FROM search_documents sd JOIN evidence e ON e.doc = sd.doc \
         WHERE e.state = 'current'",
        [],
        |row| {
            let oldest: Option<i64> = row.get(3)?;
            Ok(SearchFreshness {
                pending_document_count: row.get::<_, i64>(0)? as u64,
                failed_document_count: row.get::<_, i64>(1)? as u64,
                current_document_count: row.get::<_, i64>(2)? as u64,
                oldest_pending_age_seconds: oldest
                    .map(|t| (now.as_micros() - t).max(0) / Timestamp::MICROS_PER_SECOND),
            })
        },
    )
    .db()
}

pub fn record_degradation(conn: &Connection, degradation: &Degradation) -> Result<()> {
    set_meta(conn, DEGRADATION_KEY, degradation)
}

pub fn last_degradation(conn: &Connection) -> Result<Option<Degradation>> {
    meta(conn, DEGRADATION_KEY)
}
