//! Trace's rows: what `mnem_store::trace_read` reads to explain one relationship (its
//! cited spans, verification events, transitions, conflicts and successors).

use mnem_core::graph::{CitedSpan, Relationship, Transition, VerificationEvent};
use mnem_core::{Actor, EvidenceId, ProfileId, RelationshipId, Timestamp};
use mnem_store::trace_read::TraceRows;
use mnem_store::{GraphView, Result};
use rusqlite::params;
use rusqlite::types::Value;

use crate::rows::{parsed, UuidBytes};
use crate::DbResult;

use super::relationships::{relationship, relationships_where};
use super::{blob, SqliteRows};

impl TraceRows for SqliteRows<'_> {
    async fn relationship(
        &self,
        actor: &Actor,
        id: RelationshipId,
        view: &GraphView,
    ) -> Result<Relationship> {
        relationship(self.conn, actor, id, view)
    }

    async fn cited_spans(
        &self,
        actor: &Actor,
        id: RelationshipId,
        view: &GraphView,
    ) -> Result<Vec<CitedSpan>> {
        let sql = format!(
            "SELECT s.evidence_id, s.span_start, s.span_end, s.quote, \
             (e.space = 'team' OR e.owner_profile_id = ?3), ({}), e.source_group \
             FROM relationship_supports s \
             JOIN evidence e ON e.team_id = s.team_id AND e.evidence_id = s.evidence_id \
             WHERE s.team_id = ?1 AND s.relationship_id = ?2 \
             ORDER BY s.evidence_id, s.span_start",
            mnem_sql::evidence_state_expr(view.known_at)
        );
        let mut stmt = self.conn.prepare_cached(&sql).db()?;
        let rows = stmt
            .query_map(
                params![
                    actor.team.as_bytes(),
                    id.as_bytes(),
                    actor.profile.as_bytes()
                ],
                |row| {
                    Ok((
                        EvidenceId::from_bytes(row.get::<_, UuidBytes>(0)?.0),
                        row.get::<_, i64>(1)?,
                        row.get::<_, i64>(2)?,
                        row.get::<_, Option<String>>(3)?,
                        row.get::<_, bool>(4)?,
                        row.get::<_, Option<String>>(5)?,
                        row.get::<_, String>(6)?,
                    ))
                },
            )
            .db()?
            .collect::<rusqlite::Result<Vec<_>>>()
            .db()?;
        rows.into_iter()
            .map(
                |(evidence_id, start, end, quote, visible, state, source_group)| {
                    Ok(CitedSpan {
                        evidence_id,
                        start: start as usize,
                        end: end as usize,
                        quote,
                        visible,
                        // Before it was recorded, evidence did not exist for this view.
                        state: state.as_deref().unwrap_or("erased").parse()?,
                        source_group,
                    })
                },
            )
            .collect()
    }

    async fn verification_events(
        &self,
        actor: &Actor,
        id: RelationshipId,
        known_at: Option<Timestamp>,
        limit: usize,
    ) -> Result<Vec<VerificationEvent>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT verdict, confidence, verifier, rationale, at FROM verification_events \
                 WHERE team_id = ?1 AND relationship_id = ?2 AND at <= ?3 \
                 ORDER BY seq DESC LIMIT ?4",
            )
            .db()?;
        let events = stmt
            .query_map(
                params![
                    actor.team.as_bytes(),
                    id.as_bytes(),
                    known_at.map_or(i64::MAX, Timestamp::as_micros),
                    limit as i64
                ],
                |row| {
                    Ok(VerificationEvent {
                        verdict: parsed(row, 0)?,
                        confidence: row.get(1)?,
                        verifier: row.get(2)?,
                        rationale: row.get(3)?,
                        at: Timestamp::from_micros(row.get(4)?),
                    })
                },
            )
            .db()?
            .collect::<rusqlite::Result<Vec<_>>>()
            .db()?;
        Ok(events)
    }

    async fn transitions(
        &self,
        actor: &Actor,
        id: RelationshipId,
        known_at: Option<Timestamp>,
        limit: usize,
    ) -> Result<Vec<Transition>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT from_tier, to_tier, from_status, to_status, reason, actor_profile_id, at \
                 FROM relationship_transitions \
                 WHERE team_id = ?1 AND relationship_id = ?2 AND at <= ?3 \
                 ORDER BY seq DESC LIMIT ?4",
            )
            .db()?;
        let rows = stmt
            .query_map(
                params![
                    actor.team.as_bytes(),
                    id.as_bytes(),
                    known_at.map_or(i64::MAX, Timestamp::as_micros),
                    limit as i64
                ],
                |row| {
                    let optional = |i: usize| -> rusqlite::Result<Option<String>> { row.get(i) };
                    Ok((
                        optional(0)?,
                        row.get::<_, String>(1)?,
                        optional(2)?,
                        row.get::<_, String>(3)?,
                        row.get::<_, String>(4)?,
                        row.get::<_, UuidBytes>(5)?,
                        row.get::<_, i64>(6)?,
                    ))
                },
            )
            .db()?
            .collect::<rusqlite::Result<Vec<_>>>()
            .db()?;
        rows.into_iter()
            .map(
                |(from_tier, to_tier, from_status, to_status, reason, actor, at)| {
                    Ok(Transition {
                        from_tier: from_tier.map(|t| t.parse()).transpose()?,
                        to_tier: to_tier.parse()?,
                        from_status: from_status.map(|s| s.parse()).transpose()?,
                        to_status: to_status.parse()?,
                        reason,
                        actor: ProfileId::from_bytes(actor.0),
                        at: Timestamp::from_micros(at),
                    })
                },
            )
            .collect()
    }

    async fn conflicts(
        &self,
        actor: &Actor,
        relationship: &Relationship,
        view: &GraphView,
        limit: usize,
    ) -> Result<Vec<Relationship>> {
        relationships_where(
            self.conn,
            actor,
            view,
            &mnem_sql::conflicts_of(|i| format!("?{i}"), limit),
            vec![
                blob(relationship.subject.entity_id.as_bytes()),
                Value::Text(relationship.predicate.clone()),
                blob(relationship.relationship_id.as_bytes()),
                Value::Text(relationship.object.identity_key()),
                Value::Text(relationship.polarity.as_str().into()),
            ],
        )
        .db()
    }

    async fn successors(
        &self,
        actor: &Actor,
        id: RelationshipId,
        view: &GraphView,
    ) -> Result<Vec<Relationship>> {
        relationships_where(
            self.conn,
            actor,
            view,
            " AND r.supersedes = ? ORDER BY r.recorded_at, r.relationship_id",
            vec![blob(id.as_bytes())],
        )
        .db()
    }
}
