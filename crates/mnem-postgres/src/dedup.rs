//! The rows content-hash de-duplication reads and appends on PostgreSQL
//! (`mnem_store::dedup` decides): stored items by hash, and the `evidence_writes` log.

use mnem_core::dedup::Provenance;
use mnem_core::{Actor, Evidence, EvidenceId, ProfileId, Timestamp};
use mnem_store::dedup::ProvenanceRows;
use mnem_store::Result;

use crate::graph::PgRows;
use crate::rows::{col, evidence_from_row, parsed, EVIDENCE_COLUMNS};
use crate::{prepared, DbResult};

/// Writers of one text queue behind each other on one of this many locks per team: few
/// enough that a large batch takes a bounded number of locks, many enough that writers of
/// different texts rarely wait.
const TEXT_LOCKS: i64 = 64;

/// The writes recorded for `id`, by number (the caller has checked visibility).
pub async fn writes(
    tx: &deadpool_postgres::Transaction<'_>,
    actor: &Actor,
    id: EvidenceId,
) -> Result<Vec<Provenance>> {
    let rows = prepared::query(
        tx,
        "SELECT owner_profile_id, source_type, source, authority, source_group, source_key, \
         source_revision, observed_at, recorded_at, state \
         FROM evidence_writes WHERE team_id = $1 AND evidence_id = $2 ORDER BY number",
        &[&actor.team.0, &id.0],
    )
    .await?;
    rows.iter()
        .map(|row| {
            Ok(Provenance {
                owner: ProfileId(col(row, 0)?),
                source_type: parsed(row, 1)?,
                source: col(row, 2)?,
                authority: parsed(row, 3)?,
                source_group: col(row, 4)?,
                source_key: col(row, 5)?,
                source_revision: col(row, 6)?,
                observed_at: Timestamp::from_micros(col(row, 7)?),
                recorded_at: Timestamp::from_micros(col(row, 8)?),
                state: parsed(row, 9)?,
            })
        })
        .collect()
}

impl ProvenanceRows for PgRows<'_, '_> {
    async fn hold_texts(&self, actor: &Actor, hashes: &[String]) -> Result<()> {
        // In lock order, so two writers holding overlapping sets cannot deadlock.
        prepared::execute(
            self.tx,
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 11) + bucket) \
             FROM (SELECT DISTINCT abs(hashtext(h)::bigint) % $3 AS bucket \
                   FROM unnest($2::text[]) h) b ORDER BY bucket",
            &[&actor.team.0.to_string(), &hashes, &TEXT_LOCKS],
        )
        .await?;
        Ok(())
    }

    async fn current_with_hashes(&self, actor: &Actor, hashes: &[String]) -> Result<Vec<Evidence>> {
        // Planned afresh on every call, never from the connection's statement cache: the
        // generic plan cached while a bulk load's table was still small walked the team's
        // current rows for every batch (145 ms per batch of 1,000 at 100k items, seen
        // with auto_explain) where the hash index answers in a few milliseconds.
        let sql = format!(
            "SELECT {EVIDENCE_COLUMNS} FROM evidence e \
             WHERE e.team_id = $1 AND e.state = 'current' \
             AND (e.space = 'team' OR e.owner_profile_id = $2) \
             AND e.content_hash = ANY ($3) ORDER BY e.recorded_at, e.evidence_id"
        );
        let rows = self
            .tx
            .query(&sql, &[&actor.team.0, &actor.profile.0, &hashes])
            .await
            .db()?;
        rows.iter().map(evidence_from_row).collect()
    }

    async fn writes(&self, actor: &Actor, id: EvidenceId) -> Result<Vec<Provenance>> {
        writes(self.tx, actor, id).await
    }

    async fn append_writes(
        &self,
        actor: &Actor,
        id: EvidenceId,
        first: usize,
        writes: &[Provenance],
    ) -> Result<()> {
        for (offset, write) in writes.iter().enumerate() {
            prepared::execute(
                self.tx,
                "INSERT INTO evidence_writes (team_id, evidence_id, number, owner_profile_id, \
                 source_type, source, authority, source_group, source_key, source_revision, \
                 observed_at, recorded_at, state) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                &[
                    &actor.team.0,
                    &id.0,
                    &((first + offset) as i64),
                    &write.owner.0,
                    &write.source_type.as_str(),
                    &write.source,
                    &write.authority.as_str(),
                    &write.source_group,
                    &write.source_key,
                    &write.source_revision,
                    &write.observed_at.as_micros(),
                    &write.recorded_at.as_micros(),
                    &write.state.as_str(),
                ],
            )
            .await?;
        }
        Ok(())
    }

    async fn retract_writes(&self, actor: &Actor, id: EvidenceId, numbers: &[usize]) -> Result<()> {
        let numbers: Vec<i64> = numbers.iter().map(|&n| n as i64).collect();
        prepared::execute(
            self.tx,
            "UPDATE evidence_writes SET state = 'retracted' \
             WHERE team_id = $1 AND evidence_id = $2 AND number = ANY ($3)",
            &[&actor.team.0, &id.0, &numbers],
        )
        .await?;
        Ok(())
    }
}
