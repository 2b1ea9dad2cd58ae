//! The semantic layer's row operations on SQLite. What is read, decided and appended,
//! and in what order, is `mnem_store::graph_write`'s; these are its statements, run on
//! the writer connection inside the caller's immediate transaction.

use mnem_core::graph::{EntityKind, EntitySummary, Relationship, Rival, Standing, SupportStanding};
use mnem_core::{Actor, EntityId, Evidence, EvidenceId, LifecycleState, ProfileId, RelationshipId};
use mnem_core::{TeamId, Timestamp};
use mnem_store::graph_write::{
    DiscoveryDocument, EntityNames, GraphRows, NewRelationship, Transition,
};
use mnem_store::{GraphView, Result, StoreError};
use rusqlite::types::Value;
use rusqlite::{params, OptionalExtension};

use super::SqliteRows;
use crate::embedding_queue;
use crate::rows::UuidBytes;
use crate::{append_event, insert_evidence, visible_evidence, DbResult};

/// Visible to the actor: team evidence, or the actor's own private evidence.
const VISIBLE: &str = "(space = 'team' OR owner_profile_id = ?4)";

impl GraphRows for SqliteRows<'_> {
    async fn idempotency_record(
        &self,
        actor: &Actor,
        key: &str,
    ) -> Result<Option<(String, String)>> {
        self.conn
            .query_row(
                "SELECT request_hash, outcome FROM idempotency WHERE team_id = ?1 AND key = ?2",
                params![actor.team.as_bytes(), key],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .db()
    }

    async fn insert_idempotency_record(
        &self,
        actor: &Actor,
        key: &str,
        request_hash: &str,
        outcome: &str,
        at: Timestamp,
    ) -> Result<()> {
        self.conn
            .execute(
                "INSERT INTO idempotency (team_id, key, request_hash, outcome, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    actor.team.as_bytes(),
                    key,
                    request_hash,
                    outcome,
                    at.as_micros()
                ],
            )
            .db()?;
        Ok(())
    }

    async fn predicate_cardinality(&self, actor: &Actor, predicate: &str) -> Result<Option<bool>> {
        self.conn
            .prepare_cached(
                "SELECT single_valued FROM predicates WHERE team_id = ?1 AND predicate = ?2",
            )
            .db()?
            .query_row(params![actor.team.as_bytes(), predicate], |row| row.get(0))
            .optional()
            .db()
    }

    async fn insert_predicate(
        &self,
        actor: &Actor,
        predicate: &str,
        single_valued: bool,
        at: Timestamp,
    ) -> Result<()> {
        self.conn
            .execute(
                "INSERT INTO predicates (team_id, predicate, single_valued, declared_at) \
                 VALUES (?1, ?2, ?3, ?4)",
                params![
                    actor.team.as_bytes(),
                    predicate,
                    single_valued,
                    at.as_micros()
                ],
            )
            .db()?;
        Ok(())
    }

    async fn visible_evidence(&self, actor: &Actor, id: EvidenceId) -> Result<Evidence> {
        visible_evidence(self.conn, actor, id)
    }

    async fn insert_evidence(&self, evidence: &Evidence, reason: Option<&str>) -> Result<()> {
        insert_evidence(self.conn, evidence, reason)
    }

    async fn newer_revision_exists(
        &self,
        actor: &Actor,
        source_key: &str,
        revision: i64,
    ) -> Result<bool> {
        self.conn
            .query_row(
                &format!(
                    "SELECT EXISTS (SELECT 1 FROM evidence WHERE team_id = ?1 \
                     AND source_key = ?2 AND source_revision > ?3 AND state <> 'erased' \
                     AND {VISIBLE})"
                ),
                params![
                    actor.team.as_bytes(),
                    source_key,
                    revision,
                    actor.profile.as_bytes()
                ],
                |row| row.get(0),
            )
            .db()
    }

    async fn older_current_revisions(
        &self,
        actor: &Actor,
        source_key: &str,
        revision: i64,
    ) -> Result<Vec<EvidenceId>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT evidence_id FROM evidence WHERE team_id = ?1 AND source_key = ?2 \
                 AND source_revision < ?3 AND state = 'current' AND {VISIBLE}"
            ))
            .db()?;
        let ids = stmt
            .query_map(
                params![
                    actor.team.as_bytes(),
                    source_key,
                    revision,
                    actor.profile.as_bytes()
                ],
                |row| Ok(EvidenceId::from_bytes(row.get::<_, UuidBytes>(0)?.0)),
            )
            .db()?
            .collect::<rusqlite::Result<Vec<_>>>()
            .db()?;
        Ok(ids)
    }

    async fn set_evidence_state(
        &self,
        actor: &Actor,
        id: EvidenceId,
        state: LifecycleState,
        at: Timestamp,
        reason: Option<&str>,
    ) -> Result<()> {
        self.conn
            .execute(
                "UPDATE evidence SET state = ?3 WHERE team_id = ?1 AND evidence_id = ?2",
                params![actor.team.as_bytes(), id.as_bytes(), state.as_str()],
            )
            .db()?;
        append_event(self.conn, actor, id, state, at, reason)
    }

    async fn erase_evidence(
        &self,
        actor: &Actor,
        evidence: &Evidence,
        at: Timestamp,
    ) -> Result<()> {
        let (team, id) = (actor.team.as_bytes(), evidence.id.as_bytes());
        let doc: i64 = self
            .conn
            .query_row(
                "SELECT doc FROM evidence WHERE team_id = ?1 AND evidence_id = ?2",
                params![team, id],
                |row| row.get(0),
            )
            .db()?;
        // The postings are found again from the text they were made from.
        crate::lexical::unindex(self.conn, actor.team, doc, &evidence.content).db()?;
        crate::mentions::unindex(self.conn, doc).db()?;
        self.conn
            .execute(
                "UPDATE evidence_content SET content = '' WHERE doc = ?1",
                params![doc],
            )
            .db()?;
        self.conn
            .execute(
                "UPDATE evidence SET state = 'erased', content_hash = '', source = '', \
                 source_group = '', source_key = NULL, source_revision = NULL, labels = '[]', \
                 refs = '[]' WHERE doc = ?1",
                params![doc],
            )
            .db()?;
        self.conn
            .execute(
                "DELETE FROM evidence_refs WHERE team_id = ?1 AND evidence_id = ?2",
                params![team, id],
            )
            .db()?;
        // Who wrote it from where is not content-free: the tombstone keeps none of it.
        self.conn
            .execute(
                "DELETE FROM evidence_writes WHERE team_id = ?1 AND evidence_id = ?2",
                params![team, id],
            )
            .db()?;
        self.conn
            // Kept as an `erased` row, not deleted: the vector index sees the change and
            // drops the vector (src/ann.rs).
            .execute(
                "UPDATE search_documents SET state = 'erased', contract = NULL, vector = NULL \
                 WHERE doc = ?1",
                params![doc],
            )
            .db()?;
        self.conn
            .execute(
                "UPDATE relationship_supports SET quote = NULL \
                 WHERE team_id = ?1 AND evidence_id = ?2",
                params![team, id],
            )
            .db()?;
        append_event(
            self.conn,
            actor,
            evidence.id,
            LifecycleState::Erased,
            at,
            None,
        )
    }

    async fn relationships_citing(
        &self,
        actor: &Actor,
        evidence: &[EvidenceId],
    ) -> Result<Vec<RelationshipId>> {
        if evidence.is_empty() {
            return Ok(Vec::new());
        }
        let marks = vec!["?"; evidence.len()].join(", ");
        let mut params = vec![Value::Blob(actor.team.as_bytes().to_vec())];
        params.extend(
            evidence
                .iter()
                .map(|id| Value::Blob(id.as_bytes().to_vec())),
        );
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT DISTINCT relationship_id FROM relationship_supports \
                 WHERE team_id = ? AND evidence_id IN ({marks}) ORDER BY relationship_id"
            ))
            .db()?;
        let ids = stmt
            .query_map(rusqlite::params_from_iter(params), |row| {
                Ok(RelationshipId::from_bytes(row.get::<_, UuidBytes>(0)?.0))
            })
            .db()?
            .collect::<rusqlite::Result<Vec<_>>>()
            .db()?;
        Ok(ids)
    }

    async fn standing(&self, actor: &Actor, id: RelationshipId) -> Result<Standing> {
        let (tier, status): (String, String) = self
            .conn
            .prepare_cached(
                "SELECT tier, status FROM relationships \
                 WHERE team_id = ?1 AND relationship_id = ?2",
            )
            .db()?
            .query_row(params![actor.team.as_bytes(), id.as_bytes()], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()
            .db()?
            .ok_or(StoreError::RelationshipNotFound { id })?;
        Ok(Standing {
            tier: tier.parse()?,
            status: status.parse()?,
        })
    }

    async fn support_standings(
        &self,
        actor: &Actor,
        id: RelationshipId,
    ) -> Result<Vec<SupportStanding>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT e.source_group, e.authority, e.state FROM relationship_supports s \
                 JOIN evidence e ON e.team_id = s.team_id AND e.evidence_id = s.evidence_id \
                 WHERE s.team_id = ?1 AND s.relationship_id = ?2",
            )
            .db()?;
        let rows = stmt
            .query_map(params![actor.team.as_bytes(), id.as_bytes()], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                ))
            })
            .db()?
            .collect::<rusqlite::Result<Vec<_>>>()
            .db()?;
        rows.into_iter()
            .map(|(source_group, authority, state)| {
                Ok(SupportStanding {
                    source_group,
                    authority: authority.parse()?,
                    effective: state.parse::<LifecycleState>()? == LifecycleState::Current,
                })
            })
            .collect()
    }

    async fn has_unerased_support(&self, actor: &Actor, id: RelationshipId) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM relationship_supports s \
                 JOIN evidence e ON e.team_id = s.team_id AND e.evidence_id = s.evidence_id \
                 WHERE s.team_id = ?1 AND s.relationship_id = ?2 AND e.state <> 'erased')",
                params![actor.team.as_bytes(), id.as_bytes()],
                |row| row.get(0),
            )
            .db()
    }

    async fn update_standing(
        &self,
        actor: &Actor,
        id: RelationshipId,
        to: Standing,
        closed_at: Option<Timestamp>,
    ) -> Result<()> {
        self.conn
            .execute(
                "UPDATE relationships SET tier = ?3, status = ?4, version = version + 1, \
                 recorded_to = ?5 WHERE team_id = ?1 AND relationship_id = ?2",
                params![
                    actor.team.as_bytes(),
                    id.as_bytes(),
                    to.tier.as_str(),
                    to.status.as_str(),
                    closed_at.map(Timestamp::as_micros)
                ],
            )
            .db()?;
        Ok(())
    }

    async fn append_transition(&self, actor: &Actor, step: &Transition<'_>) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO relationship_transitions (team_id, relationship_id, seq, \
                 from_tier, to_tier, from_status, to_status, reason, actor_profile_id, at) \
                 VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM relationship_transitions \
                 WHERE team_id = ?1 AND relationship_id = ?2), ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .db()?
            .execute(params![
                actor.team.as_bytes(),
                step.relationship_id.as_bytes(),
                step.from.map(|s| s.tier.as_str()),
                step.to.tier.as_str(),
                step.from.map(|s| s.status.as_str()),
                step.to.status.as_str(),
                step.reason,
                actor.profile.as_bytes(),
                step.at.as_micros()
            ])
            .db()?;
        Ok(())
    }

    async fn rivals(
        &self,
        actor: &Actor,
        subject: EntityId,
        predicate: &str,
        except: RelationshipId,
    ) -> Result<Vec<Rival>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT relationship_id, owner_profile_id, object_key || '|' || polarity, \
                 status FROM relationships WHERE team_id = ?1 AND subject_entity_id = ?2 \
                 AND predicate = ?3 AND relationship_id <> ?4 ORDER BY relationship_id",
            )
            .db()?;
        let rows = stmt
            .query_map(
                params![
                    actor.team.as_bytes(),
                    subject.as_bytes(),
                    predicate,
                    except.as_bytes()
                ],
                |row| {
                    Ok((
                        row.get::<_, UuidBytes>(0)?,
                        row.get::<_, UuidBytes>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, String>(3)?,
                    ))
                },
            )
            .db()?
            .collect::<rusqlite::Result<Vec<_>>>()
            .db()?;
        rows.into_iter()
            .map(|(id, owner, position, status)| {
                Ok(Rival {
                    relationship_id: RelationshipId::from_bytes(id.0),
                    owner: ProfileId::from_bytes(owner.0),
                    position,
                    status: status.parse()?,
                })
            })
            .collect()
    }

    async fn relationship(&self, actor: &Actor, id: RelationshipId) -> Result<Relationship> {
        super::relationships::relationship(self.conn, actor, id, &GraphView::default())
    }

    async fn insert_relationship(&self, actor: &Actor, row: &NewRelationship<'_>) -> Result<()> {
        let (team, id) = (actor.team.as_bytes(), row.id.as_bytes());
        let claim = &row.claim;
        self.conn
            .execute(
                "INSERT INTO relationships (team_id, relationship_id, owner_profile_id, \
                 subject_entity_id, predicate, predicate_surface, object_entity_id, \
                 object_value, object_key, polarity, valid_from, valid_to, recorded_at, \
                 recorded_to, semantic_group_key, supersedes, verdict, tier, status, version) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, NULL, ?14, \
                 ?15, ?16, ?17, ?18, 1)",
                params![
                    team,
                    id,
                    actor.profile.as_bytes(),
                    row.subject.as_bytes(),
                    claim.predicate,
                    claim.predicate_surface,
                    row.object.entity_id().map(|e| e.as_bytes().to_vec()),
                    row.object_value,
                    row.object.identity_key(),
                    claim.polarity.as_str(),
                    claim.valid_from.map(Timestamp::as_micros),
                    claim.valid_to.map(Timestamp::as_micros),
                    row.recorded_at.as_micros(),
                    row.semantic_group_key,
                    row.supersedes.map(|s| s.as_bytes().to_vec()),
                    row.verdict.as_str(),
                    row.standing.tier.as_str(),
                    row.standing.status.as_str(),
                ],
            )
            .db()?;
        let mut insert_support = self
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO relationship_supports (team_id, relationship_id, \
                 evidence_id, span_start, span_end, quote) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .db()?;
        for support in row.supports {
            insert_support
                .execute(params![
                    team,
                    id,
                    support.evidence_id.as_bytes(),
                    support.start as i64,
                    support.end as i64,
                    support.quote
                ])
                .db()?;
        }
        let mut insert_event = self
            .conn
            .prepare_cached(
                "INSERT INTO verification_events (team_id, relationship_id, seq, verdict, \
                 confidence, verifier, rationale, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .db()?;
        for (seq, event) in row.events.iter().enumerate() {
            insert_event
                .execute(params![
                    team,
                    id,
                    seq as i64 + 1,
                    event.verdict.as_str(),
                    event.confidence,
                    event.verifier,
                    event.rationale,
                    event.at.as_micros()
                ])
                .db()?;
        }
        Ok(())
    }

    async fn erase_relationship(
        &self,
        actor: &Actor,
        id: RelationshipId,
        at: Timestamp,
    ) -> Result<()> {
        let team = actor.team.as_bytes();
        self.conn
            .execute(
                "INSERT INTO relationship_erasures (team_id, relationship_id, erased_at) \
                 VALUES (?1, ?2, ?3)",
                params![team, id.as_bytes(), at.as_micros()],
            )
            .db()?;
        self.conn
            .execute(
                "UPDATE graph_documents SET state = 'erased', contract = NULL, vector = NULL, \
                 text = '' WHERE team_id = ?1 AND target_kind = ?2 AND target_id = ?3",
                params![team, embedding_queue::RELATIONSHIP_DOCUMENT, id.as_bytes()],
            )
            .db()?;
        for table in [
            "verification_events",
            "relationship_transitions",
            "relationship_supports",
            "relationships",
        ] {
            self.conn
                .execute(
                    &format!("DELETE FROM {table} WHERE team_id = ?1 AND relationship_id = ?2"),
                    params![team, id.as_bytes()],
                )
                .db()?;
        }
        Ok(())
    }

    async fn entity_in_use(&self, actor: &Actor, id: EntityId) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM relationships \
                 WHERE team_id = ?1 AND subject_entity_id = ?2) \
                 OR EXISTS (SELECT 1 FROM relationships \
                 WHERE team_id = ?1 AND object_entity_id = ?2)",
                params![actor.team.as_bytes(), id.as_bytes()],
                |row| row.get(0),
            )
            .db()
    }

    async fn erase_entity(&self, actor: &Actor, id: EntityId) -> Result<()> {
        let (team, id) = (actor.team.as_bytes(), id.as_bytes());
        self.conn
            .execute(
                "UPDATE graph_documents SET state = 'erased', contract = NULL, vector = NULL, \
                 text = '' WHERE team_id = ?1 AND target_kind = ?2 AND target_id = ?3",
                params![team, embedding_queue::ENTITY_DOCUMENT, id],
            )
            .db()?;
        for table in ["entity_aliases", "entities"] {
            self.conn
                .execute(
                    &format!("DELETE FROM {table} WHERE team_id = ?1 AND entity_id = ?2"),
                    params![team, id],
                )
                .db()?;
        }
        Ok(())
    }

    async fn entities_matching(
        &self,
        actor: &Actor,
        normalised: &str,
        kind: EntityKind,
    ) -> Result<Vec<EntitySummary>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT DISTINCT n.entity_id, n.name FROM entity_aliases a \
                 JOIN entities n ON n.team_id = a.team_id AND n.entity_id = a.entity_id \
                 WHERE a.team_id = ?1 AND a.alias_key = ?2 AND (?3 = 'other' OR n.kind = ?3) \
                 ORDER BY n.entity_id",
            )
            .db()?;
        let matches = stmt
            .query_map(
                params![actor.team.as_bytes(), normalised, kind.as_str()],
                |row| {
                    Ok(EntitySummary {
                        entity_id: EntityId::from_bytes(row.get::<_, UuidBytes>(0)?.0),
                        name: row.get(1)?,
                    })
                },
            )
            .db()?
            .collect::<rusqlite::Result<Vec<_>>>()
            .db()?;
        Ok(matches)
    }

    async fn insert_entity(
        &self,
        actor: &Actor,
        entity: &EntitySummary,
        kind: EntityKind,
        at: Timestamp,
    ) -> Result<()> {
        self.conn
            .execute(
                "INSERT INTO entities (team_id, entity_id, name, kind, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    actor.team.as_bytes(),
                    entity.entity_id.as_bytes(),
                    entity.name,
                    kind.as_str(),
                    at.as_micros()
                ],
            )
            .db()?;
        Ok(())
    }

    async fn insert_aliases(
        &self,
        actor: &Actor,
        id: EntityId,
        aliases: &[(String, String)],
    ) -> Result<()> {
        let mut insert = self
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO entity_aliases (team_id, alias_key, entity_id, alias) \
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .db()?;
        for (alias, key) in aliases {
            insert
                .execute(params![actor.team.as_bytes(), key, id.as_bytes(), alias])
                .db()?;
        }
        Ok(())
    }

    async fn entity_names(&self, actor: &Actor, id: EntityId) -> Result<EntityNames> {
        let (name, kind) = self
            .conn
            .query_row(
                "SELECT name, kind FROM entities WHERE team_id = ?1 AND entity_id = ?2",
                params![actor.team.as_bytes(), id.as_bytes()],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .db()?;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT alias FROM entity_aliases WHERE team_id = ?1 AND entity_id = ?2 \
                 ORDER BY alias_key",
            )
            .db()?;
        let aliases = stmt
            .query_map(params![actor.team.as_bytes(), id.as_bytes()], |row| {
                row.get(0)
            })
            .db()?
            .collect::<rusqlite::Result<Vec<String>>>()
            .db()?;
        Ok(EntityNames {
            name,
            kind,
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
            DiscoveryDocument::Entity(id) => (embedding_queue::ENTITY_DOCUMENT, *id.as_bytes()),
            DiscoveryDocument::Relationship(id) => {
                (embedding_queue::RELATIONSHIP_DOCUMENT, *id.as_bytes())
            }
        };
        embedding_queue::enqueue_graph_document(self.conn, team, kind, &id, text, at)
    }
}
