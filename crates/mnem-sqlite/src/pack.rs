//! The listings and profile lookups memory packs need on SQLite (`mnem_store::pack`
//! exports and imports).

use mnem_core::graph::Verdict;
use mnem_core::{
    Actor, Evidence, EvidenceId, LifecycleEvent, ProfileId, RelationshipId, Timestamp,
};
use mnem_store::pack::PackRows;
use mnem_store::Result;
use rusqlite::{params, Connection, OptionalExtension};

use crate::graph::SqliteRows;
use crate::rows::UuidBytes;
use crate::DbResult;

/// The lifecycle log of one evidence item, oldest first (the caller checked visibility).
pub fn evidence_events(
    conn: &Connection,
    actor: &Actor,
    id: EvidenceId,
) -> Result<Vec<LifecycleEvent>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT state, at, actor_profile_id, reason FROM evidence_events \
             WHERE team_id = ?1 AND evidence_id = ?2 ORDER BY seq",
        )
        .db()?;
    let events = stmt
        .query_map(params![actor.team.as_bytes(), id.as_bytes()], |row| {
            let state: String = row.get(0)?;
            Ok((state, row.get(1)?, row.get::<_, UuidBytes>(2)?, row.get(3)?))
        })
        .db()?
        .map(|row| {
            let (state, at, profile, reason) = row.db()?;
            Ok(LifecycleEvent {
                state: state.parse()?,
                at: Timestamp::from_micros(at),
                actor: ProfileId::from_bytes(profile.0),
                reason,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(events)
}

impl PackRows for SqliteRows<'_> {
    async fn team_name(&self, actor: &Actor) -> Result<String> {
        self.conn
            .query_row(
                "SELECT name FROM teams WHERE team_id = ?1",
                params![actor.team.as_bytes()],
                |row| row.get(0),
            )
            .db()
    }

    async fn profiles(&self, actor: &Actor) -> Result<Vec<(ProfileId, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT profile_id, name FROM profiles WHERE team_id = ?1")
            .db()?;
        let rows = stmt
            .query_map(params![actor.team.as_bytes()], |row| {
                Ok((
                    ProfileId::from_bytes(row.get::<_, UuidBytes>(0)?.0),
                    row.get(1)?,
                ))
            })
            .db()?;
        rows.map(|row| row.db()).collect()
    }

    async fn ensure_profile(
        &self,
        actor: &Actor,
        name: &str,
        id: ProfileId,
        at: Timestamp,
    ) -> Result<ProfileId> {
        let team = actor.team.as_bytes();
        let known = self
            .conn
            .query_row(
                "SELECT profile_id FROM profiles WHERE team_id = ?1 AND name = ?2",
                params![team, name],
                |row| row.get::<_, UuidBytes>(0),
            )
            .optional()
            .db()?;
        if let Some(known) = known {
            return Ok(ProfileId::from_bytes(known.0));
        }
        self.conn
            .execute(
                "INSERT INTO profiles (team_id, profile_id, name, created_at) \
                 VALUES (?1, ?2, ?3, ?4)",
                params![team, id.as_bytes(), name, at.as_micros()],
            )
            .db()?;
        Ok(id)
    }

    async fn evidence_ids(&self, actor: &Actor) -> Result<Vec<EvidenceId>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT evidence_id FROM evidence WHERE team_id = ?1 AND state <> 'erased' \
                 AND (space = 'team' OR owner_profile_id = ?2) \
                 ORDER BY recorded_at, evidence_id",
            )
            .db()?;
        let rows = stmt
            .query_map(
                params![actor.team.as_bytes(), actor.profile.as_bytes()],
                |row| row.get::<_, UuidBytes>(0),
            )
            .db()?;
        rows.map(|row| Ok(EvidenceId::from_bytes(row.db()?.0)))
            .collect()
    }

    async fn relationship_verdicts(&self, actor: &Actor) -> Result<Vec<(RelationshipId, Verdict)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT relationship_id, verdict FROM relationships WHERE team_id = ?1 \
                 ORDER BY recorded_at, relationship_id",
            )
            .db()?;
        let rows = stmt
            .query_map(params![actor.team.as_bytes()], |row| {
                Ok((row.get::<_, UuidBytes>(0)?, row.get::<_, String>(1)?))
            })
            .db()?;
        rows.map(|row| {
            let (id, verdict) = row.db()?;
            Ok((RelationshipId::from_bytes(id.0), verdict.parse()?))
        })
        .collect()
    }

    async fn evidence_events(&self, actor: &Actor, id: EvidenceId) -> Result<Vec<LifecycleEvent>> {
        evidence_events(self.conn, actor, id)
    }

    /// One writer and in-process statements: inserting one by one costs no round trips.
    async fn insert_evidence_batch(&self, records: &[(&Evidence, Option<&str>)]) -> Result<()> {
        for (record, reason) in records {
            crate::insert_evidence(self.conn, record, *reason)?;
        }
        Ok(())
    }
}
