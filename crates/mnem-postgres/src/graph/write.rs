//! The semantic layer's row operations on PostgreSQL. What is read, decided and
//! appended, and in what order, is `mnem_store::graph_write`'s; these are its
//! statements (constant text, prepared once per connection), run in the caller's
//! transaction. Callers hold the team's graph lock
//! (`lock_team_graph`), so the script's read-then-write steps never interleave within
//! a team.

use mnem_core::graph::{EntityKind, EntitySummary, Relationship, Rival, Standing, SupportStanding};
use mnem_core::{Actor, EntityId, Evidence, EvidenceId, LifecycleState, ProfileId, RelationshipId};
use mnem_core::{TeamId, Timestamp};
use mnem_store::graph_write::{
    DiscoveryDocument, EntityNames, GraphRows, NewRelationship, Transition,
};
use mnem_store::{GraphView, Result, StoreError};
use uuid::Uuid;

use super::PgRows;
use crate::embedding_queue;
use crate::prepared;
use crate::rows::{col, parsed};
use crate::{append_event, insert_evidence, visible_evidence};

impl GraphRows for PgRows<'_, '_> {
    async fn idempotency_record(
        &self,
        actor: &Actor,
        key: &str,
    ) -> Result<Option<(String, String)>> {
        prepared::query_opt(
            self.tx,
            "SELECT request_hash, outcome FROM idempotency WHERE team_id = $1 AND key = $2",
            &[&actor.team.0, &key],
        )
        .await?
        .map(|row| Ok((col(&row, 0)?, col(&row, 1)?)))
        .transpose()
    }

    async fn insert_idempotency_record(
        &self,
        actor: &Actor,
        key: &str,
        request_hash: &str,
        outcome: &str,
        at: Timestamp,
    ) -> Result<()> {
        prepared::execute(
            self.tx,
            "INSERT INTO idempotency (team_id, key, request_hash, outcome, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
            &[
                &actor.team.0,
                &key,
                &request_hash,
                &outcome,
                &at.as_micros(),
            ],
        )
        .await?;
        Ok(())
    }

    async fn predicate_cardinality(&self, actor: &Actor, predicate: &str) -> Result<Option<bool>> {
        prepared::query_opt(
            self.tx,
            "SELECT single_valued FROM predicates WHERE team_id = $1 AND predicate = $2",
            &[&actor.team.0, &predicate],
        )
        .await?
        .map(|row| col(&row, 0))
        .transpose()
    }

    async fn insert_predicate(
        &self,
        actor: &Actor,
        predicate: &str,
        single_valued: bool,
        at: Timestamp,
    ) -> Result<()> {
        prepared::execute(
            self.tx,
            "INSERT INTO predicates (team_id, predicate, single_valued, declared_at) \
             VALUES ($1, $2, $3, $4)",
            &[&actor.team.0, &predicate, &single_valued, &at.as_micros()],
        )
        .await?;
        Ok(())
    }

    async fn visible_evidence(&self, actor: &Actor, id: EvidenceId) -> Result<Evidence> {
        visible_evidence(self.tx, actor, id).await
    }

    async fn insert_evidence(&self, evidence: &Evidence, reason: Option<&str>) -> Result<()> {
        insert_evidence(self.tx, evidence, reason).await
    }

    async fn newer_revision_exists(
        &self,
        actor: &Actor,
        source_key: &str,
        revision: i64,
    ) -> Result<bool> {
        let row = prepared::query_one(
            self.tx,
            "SELECT EXISTS (SELECT 1 FROM evidence WHERE team_id = $1 AND source_key = $2 \
             AND source_revision > $3 AND state <> 'erased' \
             AND (space = 'team' OR owner_profile_id = $4))",
            &[&actor.team.0, &source_key, &revision, &actor.profile.0],
        )
        .await?;
        col(&row, 0)
    }

    async fn older_current_revisions(
        &self,
        actor: &Actor,
        source_key: &str,
        revision: i64,
    ) -> Result<Vec<EvidenceId>> {
        prepared::query(
            self.tx,
            "SELECT evidence_id FROM evidence WHERE team_id = $1 AND source_key = $2 \
             AND source_revision < $3 AND state = 'current' \
             AND (space = 'team' OR owner_profile_id = $4)",
            &[&actor.team.0, &source_key, &revision, &actor.profile.0],
        )
        .await?
        .iter()
        .map(|row| Ok(EvidenceId(col(row, 0)?)))
        .collect()
    }

    /// Also drops the item's embedding job: only current evidence is embedded.
    async fn set_evidence_state(
        &self,
        actor: &Actor,
        id: EvidenceId,
        state: LifecycleState,
        at: Timestamp,
        reason: Option<&str>,
    ) -> Result<()> {
        prepared::execute(
            self.tx,
            "UPDATE evidence SET state = $3 WHERE team_id = $1 AND evidence_id = $2",
            &[&actor.team.0, &id.0, &state.as_str()],
        )
        .await?;
        embedding_queue::dequeue(
            self.tx,
            actor.team,
            embedding_queue::EVIDENCE_DOCUMENT,
            id.0,
        )
        .await?;
        append_event(self.tx, actor, id, state, at, reason).await
    }

    async fn erase_evidence(
        &self,
        actor: &Actor,
        evidence: &Evidence,
        at: Timestamp,
    ) -> Result<()> {
        let (team, id) = (&actor.team.0, &evidence.id.0);
        // Clearing the terms removes the text from the team's statistics (by trigger);
        // its postings are found again from the text they were made from.
        let erased = prepared::query_one(
            self.tx,
            "UPDATE evidence SET content = '', term_freqs = '{}', text_length = 0, \
             state = 'erased', content_hash = '', \
             source = '', source_group = '', source_key = NULL, source_revision = NULL, \
             labels = '[]', refs = '[]' WHERE team_id = $1 AND evidence_id = $2 \
             RETURNING doc",
            &[team, id],
        )
        .await?;
        let doc: i64 = col(&erased, 0)?;
        crate::lexical::unindex(self.tx, *team, doc, &evidence.content).await?;
        crate::mentions::unindex(self.tx, *team, doc).await?;
        for sql in [
            "DELETE FROM evidence_refs WHERE team_id = $1 AND evidence_id = $2",
            // Who wrote it from where is not content-free: the tombstone keeps none of it.
            "DELETE FROM evidence_writes WHERE team_id = $1 AND evidence_id = $2",
            "DELETE FROM evidence_vectors WHERE team_id = $1 AND evidence_id = $2",
            "UPDATE relationship_supports SET quote = NULL WHERE team_id = $1 AND evidence_id = $2",
        ] {
            prepared::execute(self.tx, sql, &[team, id]).await?;
        }
        embedding_queue::dequeue(self.tx, actor.team, embedding_queue::EVIDENCE_DOCUMENT, *id)
            .await?;
        append_event(
            self.tx,
            actor,
            evidence.id,
            LifecycleState::Erased,
            at,
            None,
        )
        .await
    }

    async fn relationships_citing(
        &self,
        actor: &Actor,
        evidence: &[EvidenceId],
    ) -> Result<Vec<RelationshipId>> {
        if evidence.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<Uuid> = evidence.iter().map(|id| id.0).collect();
        prepared::query(
            self.tx,
            "SELECT DISTINCT relationship_id FROM relationship_supports \
             WHERE team_id = $1 AND evidence_id = ANY ($2) ORDER BY relationship_id",
            &[&actor.team.0, &ids],
        )
        .await?
        .iter()
        .map(|row| Ok(RelationshipId(col(row, 0)?)))
        .collect()
    }

    async fn standing(&self, actor: &Actor, id: RelationshipId) -> Result<Standing> {
        let row = prepared::query_opt(
            self.tx,
            "SELECT tier, status FROM relationships \
             WHERE team_id = $1 AND relationship_id = $2",
            &[&actor.team.0, &id.0],
        )
        .await?
        .ok_or(StoreError::RelationshipNotFound { id })?;
        Ok(Standing {
            tier: parsed(&row, 0)?,
            status: parsed(&row, 1)?,
        })
    }

    async fn support_standings(
        &self,
        actor: &Actor,
        id: RelationshipId,
    ) -> Result<Vec<SupportStanding>> {
        prepared::query(
            self.tx,
            "SELECT e.source_group, e.authority, e.state FROM relationship_supports s \
             JOIN evidence e ON e.team_id = s.team_id AND e.evidence_id = s.evidence_id \
             WHERE s.team_id = $1 AND s.relationship_id = $2",
            &[&actor.team.0, &id.0],
        )
        .await?
        .iter()
        .map(|row| {
            Ok(SupportStanding {
                source_group: col(row, 0)?,
                authority: parsed(row, 1)?,
                effective: parsed::<LifecycleState>(row, 2)? == LifecycleState::Current,
            })
        })
        .collect()
    }

    async fn has_unerased_support(&self, actor: &Actor, id: RelationshipId) -> Result<bool> {
        let row = prepared::query_one(
            self.tx,
            "SELECT EXISTS (SELECT 1 FROM relationship_supports s \
             JOIN evidence e ON e.team_id = s.team_id AND e.evidence_id = s.evidence_id \
             WHERE s.team_id = $1 AND s.relationship_id = $2 AND e.state <> 'erased')",
            &[&actor.team.0, &id.0],
        )
        .await?;
        col(&row, 0)
    }

    async fn update_standing(
        &self,
        actor: &Actor,
        id: RelationshipId,
        to: Standing,
        closed_at: Option<Timestamp>,
    ) -> Result<()> {
        prepared::execute(
            self.tx,
            "UPDATE relationships SET tier = $3, status = $4, version = version + 1, \
             recorded_to = $5 WHERE team_id = $1 AND relationship_id = $2",
            &[
                &actor.team.0,
                &id.0,
                &to.tier.as_str(),
                &to.status.as_str(),
                &closed_at.map(Timestamp::as_micros),
            ],
        )
        .await?;
        Ok(())
    }

    async fn append_transition(&self, actor: &Actor, step: &Transition<'_>) -> Result<()> {
        prepared::execute(
            self.tx,
            "INSERT INTO relationship_transitions (team_id, relationship_id, seq, \
             from_tier, to_tier, from_status, to_status, reason, actor_profile_id, at) \
             VALUES ($1, $2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM relationship_transitions \
             WHERE team_id = $1 AND relationship_id = $2), $3, $4, $5, $6, $7, $8, $9)",
            &[
                &actor.team.0,
                &step.relationship_id.0,
                &step.from.map(|s| s.tier.as_str()),
                &step.to.tier.as_str(),
                &step.from.map(|s| s.status.as_str()),
                &step.to.status.as_str(),
                &step.reason,
                &actor.profile.0,
                &step.at.as_micros(),
            ],
        )
        .await?;
        Ok(())
    }

    async fn rivals(
        &self,
        actor: &Actor,
        subject: EntityId,
        predicate: &str,
        except: RelationshipId,
    ) -> Result<Vec<Rival>> {
        prepared::query(
            self.tx,
            "SELECT relationship_id, owner_profile_id, object_key || '|' || polarity, \
             status FROM relationships WHERE team_id = $1 AND subject_entity_id = $2 \
             AND predicate = $3 AND relationship_id <> $4 ORDER BY relationship_id",
            &[&actor.team.0, &subject.0, &predicate, &except.0],
        )
        .await?
        .iter()
        .map(|row| {
            Ok(Rival {
                relationship_id: RelationshipId(col(row, 0)?),
                owner: ProfileId(col(row, 1)?),
                position: col(row, 2)?,
                status: parsed(row, 3)?,
            })
        })
        .collect()
    }

    async fn relationship(&self, actor: &Actor, id: RelationshipId) -> Result<Relationship> {
        super::relationships::relationship(self.tx, actor, id, &GraphView::default()).await
    }

    async fn insert_relationship(&self, actor: &Actor, row: &NewRelationship<'_>) -> Result<()> {
        let (team, id) = (&actor.team.0, &row.id.0);
        let claim = &row.claim;
        prepared::execute(
            self.tx,
            "INSERT INTO relationships (team_id, relationship_id, owner_profile_id, \
             subject_entity_id, predicate, predicate_surface, object_entity_id, \
             object_value, object_key, polarity, valid_from, valid_to, recorded_at, \
             recorded_to, semantic_group_key, supersedes, verdict, tier, status, version) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULL, $14, \
             $15, $16, $17, $18, 1)",
            &[
                team,
                id,
                &actor.profile.0,
                &row.subject.0,
                &claim.predicate,
                &claim.predicate_surface,
                &row.object.entity_id().map(|e| e.0),
                &row.object_value,
                &row.object.identity_key(),
                &claim.polarity.as_str(),
                &claim.valid_from.map(Timestamp::as_micros),
                &claim.valid_to.map(Timestamp::as_micros),
                &row.recorded_at.as_micros(),
                &row.semantic_group_key,
                &row.supersedes.map(|s| s.0),
                &row.verdict.as_str(),
                &row.standing.tier.as_str(),
                &row.standing.status.as_str(),
            ],
        )
        .await?;
        for support in row.supports {
            prepared::execute(
                self.tx,
                "INSERT INTO relationship_supports (team_id, relationship_id, evidence_id, \
                 span_start, span_end, quote) VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT DO NOTHING",
                &[
                    team,
                    id,
                    &support.evidence_id.0,
                    &(support.start as i64),
                    &(support.end as i64),
                    &support.quote,
                ],
            )
            .await?;
        }
        for (seq, event) in row.events.iter().enumerate() {
            prepared::execute(
                self.tx,
                "INSERT INTO verification_events (team_id, relationship_id, seq, verdict, \
                 confidence, verifier, rationale, at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                &[
                    team,
                    id,
                    &(seq as i64 + 1),
                    &event.verdict.as_str(),
                    &event.confidence,
                    &event.verifier,
                    &event.rationale,
                    &event.at.as_micros(),
                ],
            )
            .await?;
        }
        Ok(())
    }

    async fn erase_relationship(
        &self,
        actor: &Actor,
        id: RelationshipId,
        at: Timestamp,
    ) -> Result<()> {
        let team = &actor.team.0;
        prepared::execute(
            self.tx,
            "INSERT INTO relationship_erasures (team_id, relationship_id, erased_at) \
             VALUES ($1, $2, $3)",
            &[team, &id.0, &at.as_micros()],
        )
        .await?;
        prepared::execute(
            self.tx,
            "DELETE FROM graph_documents \
             WHERE team_id = $1 AND target_kind = $2 AND target_id = $3",
            &[team, &embedding_queue::RELATIONSHIP_DOCUMENT, &id.0],
        )
        .await?;
        embedding_queue::dequeue(
            self.tx,
            actor.team,
            embedding_queue::RELATIONSHIP_DOCUMENT,
            id.0,
        )
        .await?;
        for table in [
            "verification_events",
            "relationship_transitions",
            "relationship_supports",
            "relationships",
        ] {
            prepared::execute(
                self.tx,
                &format!("DELETE FROM {table} WHERE team_id = $1 AND relationship_id = $2"),
                &[team, &id.0],
            )
            .await?;
        }
        Ok(())
    }

    async fn entity_in_use(&self, actor: &Actor, id: EntityId) -> Result<bool> {
        let row = prepared::query_one(
            self.tx,
            "SELECT EXISTS (SELECT 1 FROM relationships \
             WHERE team_id = $1 AND subject_entity_id = $2) \
             OR EXISTS (SELECT 1 FROM relationships \
             WHERE team_id = $1 AND object_entity_id = $2)",
            &[&actor.team.0, &id.0],
        )
        .await?;
        col(&row, 0)
    }

    async fn erase_entity(&self, actor: &Actor, id: EntityId) -> Result<()> {
        let team = &actor.team.0;
        prepared::execute(
            self.tx,
            "DELETE FROM graph_documents \
             WHERE team_id = $1 AND target_kind = $2 AND target_id = $3",
            &[team, &embedding_queue::ENTITY_DOCUMENT, &id.0],
        )
        .await?;
        embedding_queue::dequeue(self.tx, actor.team, embedding_queue::ENTITY_DOCUMENT, id.0)
            .await?;
        for table in ["entity_aliases", "entities"] {
            prepared::execute(
                self.tx,
                &format!("DELETE FROM {table} WHERE team_id = $1 AND entity_id = $2"),
                &[team, &id.0],
            )
            .await?;
        }
        Ok(())
    }

    async fn entities_matching(
        &self,
        actor: &Actor,
        normalised: &str,
        kind: EntityKind,
    ) -> Result<Vec<EntitySummary>> {
        prepared::query(
            self.tx,
            "SELECT DISTINCT n.entity_id, n.name FROM entity_aliases a \
             JOIN entities n ON n.team_id = a.team_id AND n.entity_id = a.entity_id \
             WHERE a.team_id = $1 AND a.alias_key = $2 AND ($3 = 'other' OR n.kind = $3) \
             ORDER BY n.entity_id",
            &[&actor.team.0, &normalised, &kind.as_str()],
        )
        .await?
        .iter()
        .map(|row| {
            Ok(EntitySummary {
                entity_id: EntityId(col(row, 0)?),
                name: col(row, 1)?,
            })
        })
        .collect()
    }

    async fn insert_entity(
        &self,
        actor: &Actor,
        entity: &EntitySummary,
        kind: EntityKind,
        at: Timestamp,
    ) -> Result<()> {
        prepared::execute(
            self.tx,
            "INSERT INTO entities (team_id, entity_id, name, kind, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
            &[
                &actor.team.0,
                &entity.entity_id.0,
                &entity.name,
                &kind.as_str(),
                &at.as_micros(),
            ],
        )
        .await?;
        Ok(())
    }

    async fn insert_aliases(
        &self,
        actor: &Actor,
        id: EntityId,
        aliases: &[(String, String)],
    ) -> Result<()> {
        for (alias, key) in aliases {
            prepared::execute(
                self.tx,
                "INSERT INTO entity_aliases (team_id, alias_key, entity_id, alias) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                &[&actor.team.0, key, &id.0, alias],
            )
            .await?;
        }
        Ok(())
    }

    async fn entity_names(&self, actor: &Actor, id: EntityId) -> Result<EntityNames> {
        let row = prepared::query_one(
            self.tx,
            "SELECT name, kind FROM entities WHERE team_id = $1 AND entity_id = $2",
            &[&actor.team.0, &id.0],
        )
        .await?;
        let aliases = prepared::query(
            self.tx,
            "SELECT alias FROM entity_aliases WHERE team_id = $1 AND entity_id = $2 \
             ORDER BY alias_key",
            &[&actor.team.0, &id.0],
        )
        .await?
        .iter()
        .map(|row| col::<String>(row, 0))
        .collect::<Result<Vec<_>>>()?;
        Ok(EntityNames {
            name: col(&row, 0)?,
            kind: col(&row, 1)?,
            aliases,
        })
    }

    async fn enqueue_discovery_document(
        &self,
        team: TeamId,
        target: DiscoveryDocument,
        text: &str,
        at: Timestamp,
    ) -> Result<()> {
        let (kind, id) = match target {
            DiscoveryDocument::Entity(id) => (embedding_queue::ENTITY_DOCUMENT, id.0),
            DiscoveryDocument::Relationship(id) => (embedding_queue::RELATIONSHIP_DOCUMENT, id.0),
        };
        embedding_queue::enqueue_graph_document(self.tx, team, kind, id, text, at).await
    }
}
