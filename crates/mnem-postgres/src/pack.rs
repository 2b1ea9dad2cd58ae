//! The listings and profile lookups memory packs need on PostgreSQL
//! (`mnem_store::pack` exports and imports), under the transaction's team policy.

use mnem_core::graph::Verdict;
use mnem_core::{
    Actor, Evidence, EvidenceId, LifecycleEvent, ProfileId, RelationshipId, Timestamp,
};
use mnem_store::pack::PackRows;
use mnem_store::Result;
use tokio_postgres::Transaction;

use crate::graph::PgRows;
use crate::rows::{col, parsed};
use crate::DbResult;

/// The lifecycle log of one evidence item, oldest first (the caller checked visibility).
pub async fn evidence_events(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: EvidenceId,
) -> Result<Vec<LifecycleEvent>> {
    let rows = tx
        .query(
            "SELECT state, at, actor_profile_id, reason FROM evidence_events \
             WHERE team_id = $1 AND evidence_id = $2 ORDER BY seq",
            &[&actor.team.0, &id.0],
        )
        .await
        .db()?;
    rows.iter()
        .map(|row| {
            Ok(LifecycleEvent {
                state: col::<String>(row, 0)?.parse()?,
                at: Timestamp::from_micros(col(row, 1)?),
                actor: ProfileId(col(row, 2)?),
                reason: col(row, 3)?,
            })
        })
        .collect()
}

impl PackRows for PgRows<'_, '_> {
    async fn team_name(&self, actor: &Actor) -> Result<String> {
        let row = self
            .tx
            .query_one(
                "SELECT name FROM teams WHERE team_id = $1",
                &[&actor.team.0],
            )
            .await
            .db()?;
        col(&row, 0)
    }

    async fn profiles(&self, actor: &Actor) -> Result<Vec<(ProfileId, String)>> {
        let rows = self
            .tx
            .query(
                "SELECT profile_id, name FROM profiles WHERE team_id = $1",
                &[&actor.team.0],
            )
            .await
            .db()?;
        rows.iter()
            .map(|row| Ok((ProfileId(col(row, 0)?), col(row, 1)?)))
            .collect()
    }

    async fn ensure_profile(
        &self,
        actor: &Actor,
        name: &str,
        id: ProfileId,
        at: Timestamp,
    ) -> Result<ProfileId> {
        self.tx
            .execute(
                "INSERT INTO profiles (team_id, profile_id, name, created_at) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (team_id, name) DO NOTHING",
                &[&actor.team.0, &id.0, &name, &at.as_micros()],
            )
            .await
            .db()?;
        let row = self
            .tx
            .query_one(
                "SELECT profile_id FROM profiles WHERE team_id = $1 AND name = $2",
                &[&actor.team.0, &name],
            )
            .await
            .db()?;
        Ok(ProfileId(col(&row, 0)?))
    }

    async fn evidence_ids(&self, actor: &Actor) -> Result<Vec<EvidenceId>> {
        let rows = self
            .tx
            .query(
                "SELECT evidence_id FROM evidence WHERE team_id = $1 AND state <> 'erased' \
                 AND (space = 'team' OR owner_profile_id = $2) \
                 ORDER BY recorded_at, evidence_id",
                &[&actor.team.0, &actor.profile.0],
            )
            .await
            .db()?;
        rows.iter()
            .map(|row| Ok(EvidenceId(col(row, 0)?)))
            .collect()
    }

    async fn relationship_verdicts(&self, actor: &Actor) -> Result<Vec<(RelationshipId, Verdict)>> {
        let rows = self
            .tx
            .query(
                "SELECT relationship_id, verdict FROM relationships WHERE team_id = $1 \
                 ORDER BY recorded_at, relationship_id",
                &[&actor.team.0],
            )
            .await
            .db()?;
        rows.iter()
            .map(|row| Ok((RelationshipId(col(row, 0)?), parsed(row, 1)?)))
            .collect()
    }

    async fn evidence_events(&self, actor: &Actor, id: EvidenceId) -> Result<Vec<LifecycleEvent>> {
        evidence_events(self.tx, actor, id).await
    }

    async fn insert_evidence_batch(&self, records: &[(&Evidence, Option<&str>)]) -> Result<()> {
        crate::insert_evidence_batch(self.tx, records).await
    }
}
