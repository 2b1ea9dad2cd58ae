//! The rows content-hash de-duplication reads and appends on SQLite
//! (`mnem_store::dedup` decides): stored items by hash, and the `evidence_writes` log.

use mnem_core::dedup::Provenance;
use mnem_core::{Actor, Evidence, EvidenceId, ProfileId, Timestamp};
use mnem_store::dedup::ProvenanceRows;
use mnem_store::Result;
use rusqlite::{params, Connection};

use crate::graph::SqliteRows;
use crate::rows::{evidence_from_row, UuidBytes, EVIDENCE_COLUMNS, EVIDENCE_FROM};
use crate::DbResult;

/// The writes recorded for `id`, by number (the caller has checked visibility).
pub fn writes(conn: &Connection, actor: &Actor, id: EvidenceId) -> Result<Vec<Provenance>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT owner_profile_id, source_type, source, authority, source_group, \
             source_key, source_revision, observed_at, recorded_at, state \
             FROM evidence_writes WHERE team_id = ?1 AND evidence_id = ?2 ORDER BY number",
        )
        .db()?;
    let rows = stmt
        .query_map(params![actor.team.as_bytes(), id.as_bytes()], |row| {
            Ok((
                row.get::<_, UuidBytes>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, Option<String>>(5)?,
                row.get::<_, Option<i64>>(6)?,
                row.get::<_, i64>(7)?,
                row.get::<_, i64>(8)?,
                row.get::<_, String>(9)?,
            ))
        })
        .db()?;
    rows.map(|row| {
        let (
            owner,
            source_type,
            source,
            authority,
            group,
            key,
            revision,
            observed,
            recorded,
            state,
        ) = row.db()?;
        Ok(Provenance {
            owner: ProfileId::from_bytes(owner.0),
            source_type: source_type.parse()?,
            source,
            authority: authority.parse()?,
            source_group: group,
            source_key: key,
            source_revision: revision,
            observed_at: Timestamp::from_micros(observed),
            recorded_at: Timestamp::from_micros(recorded),
            state: state.parse()?,
        })
    })
    .collect()
}

impl ProvenanceRows for SqliteRows<'_> {
    /// SQLite runs one writer at a time: nothing to hold.
    async fn hold_texts(&self, _actor: &Actor, _hashes: &[String]) -> Result<()> {
        Ok(())
    }

    async fn current_with_hashes(&self, actor: &Actor, hashes: &[String]) -> Result<Vec<Evidence>> {
        // The hashes travel as one JSON array: one statement text, prepared once.
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {EVIDENCE_COLUMNS} FROM {EVIDENCE_FROM} \
                 WHERE e.team_id = ?1 AND e.state = 'current' \
                 AND (e.space = 'team' OR e.owner_profile_id = ?2) \
                 AND e.content_hash IN (SELECT value FROM json_each(?3)) \
                 ORDER BY e.recorded_at, e.evidence_id"
            ))
            .db()?;
        let hashes = serde_json::to_string(hashes).map_err(mnem_store::StoreError::backend)?;
        let rows = stmt
            .query_map(
                params![actor.team.as_bytes(), actor.profile.as_bytes(), hashes],
                evidence_from_row,
            )
            .db()?;
        rows.collect::<rusqlite::Result<_>>().db()
    }

    async fn writes(&self, actor: &Actor, id: EvidenceId) -> Result<Vec<Provenance>> {
        writes(self.conn, actor, id)
    }

    async fn append_writes(
        &self,
        actor: &Actor,
        id: EvidenceId,
        first: usize,
        writes: &[Provenance],
    ) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "INSERT INTO evidence_writes (team_id, evidence_id, number, owner_profile_id, \
                 source_type, source, authority, source_group, source_key, source_revision, \
                 observed_at, recorded_at, state) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )
            .db()?;
        for (offset, write) in writes.iter().enumerate() {
            stmt.execute(params![
                actor.team.as_bytes(),
                id.as_bytes(),
                (first + offset) as i64,
                write.owner.as_bytes(),
                write.source_type.as_str(),
                write.source,
                write.authority.as_str(),
                write.source_group,
                write.source_key,
                write.source_revision,
                write.observed_at.as_micros(),
                write.recorded_at.as_micros(),
                write.state.as_str(),
            ])
            .db()?;
        }
        Ok(())
    }

    async fn retract_writes(&self, actor: &Actor, id: EvidenceId, numbers: &[usize]) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "UPDATE evidence_writes SET state = 'retracted' \
                 WHERE team_id = ?1 AND evidence_id = ?2 AND number = ?3",
            )
            .db()?;
        for &number in numbers {
            stmt.execute(params![actor.team.as_bytes(), id.as_bytes(), number as i64])
                .db()?;
        }
        Ok(())
    }
}
