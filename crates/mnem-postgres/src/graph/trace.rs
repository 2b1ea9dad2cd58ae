//! Trace's rows: what `mnem_store::trace_read` reads to explain one relationship (its
//! cited spans, verification events, transitions, conflicts and successors).

use mnem_core::graph::{CitedSpan, Relationship, Transition, VerificationEvent};
use mnem_core::{Actor, EvidenceId, ProfileId, RelationshipId, Timestamp};
use mnem_store::trace_read::TraceRows;
use mnem_store::{GraphView, Result};

use crate::prepared;
use crate::rows::{col, parsed};

use super::relationships::{relationship, relationships_where};
use super::{boxed, PgRows};

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
        prepared::query(self.tx, &sql, &[&actor.team.0, &id.0, &actor.profile.0])
            .await?
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
        self.history(
            "SELECT verdict, confidence, verifier, rationale, at FROM verification_events \
             WHERE team_id = $1 AND relationship_id = $2 AND at <= $3 \
             ORDER BY seq DESC LIMIT $4",
            actor,
            id,
            known_at,
            limit,
        )
        .await?
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
        self.history(
            "SELECT from_tier, to_tier, from_status, to_status, reason, actor_profile_id, at \
             FROM relationship_transitions \
             WHERE team_id = $1 AND relationship_id = $2 AND at <= $3 \
             ORDER BY seq DESC LIMIT $4",
            actor,
            id,
            known_at,
            limit,
        )
        .await?
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
        relationships_where(
            self.tx,
            actor,
            view,
            &mnem_sql::conflicts_of(|i| format!("${i}"), limit),
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
        relationships_where(
            self.tx,
            actor,
            view,
            " AND r.supersedes = $2 ORDER BY r.recorded_at, r.relationship_id",
            vec![boxed(id.0)],
        )
        .await
    }
}

impl PgRows<'_, '_> {
    /// A relationship's newest history rows as known at `known_at` (all, for `None`), at
    /// most `limit`: `sql` takes the team, the relationship, the time and the limit.
    async fn history(
        &self,
        sql: &str,
        actor: &Actor,
        id: RelationshipId,
        known_at: Option<Timestamp>,
        limit: usize,
    ) -> Result<Vec<tokio_postgres::Row>> {
        prepared::query(
            self.tx,
            sql,
            &[
                &actor.team.0,
                &id.0,
                &known_at.map_or(i64::MAX, Timestamp::as_micros),
                &(limit as i64),
            ],
        )
        .await
    }
}
