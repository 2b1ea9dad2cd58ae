//! Writing the semantic layer inside one transaction: the backend gathers the facts the
//! core's decisions need (resolution matches, support standings, rivals), calls
//! `mnem_core::graph`, and appends what it decides.

use mnem_core::graph::{
    char_span, initial_standing, recomputed_standing, semantic_group_key, single_valued_conflicts,
    CitedEvidence, ConflictAction, EntityRef, EntitySummary, EvidenceOutcome, ObjectSummary,
    Polarity, ProposedObject, RelationshipOutcome, RelationshipStatus, RememberOutcome, Rival,
    Standing, SupportStanding, Tier,
};
use mnem_core::{
    Actor, EntityId, Evidence, EvidenceId, LifecycleState, ProfileId, RelationshipId, Space,
    Timestamp, ValidationError,
};
use mnem_store::{
    new_uuid_v7, Result, StoreError, VerifiedCorrection, VerifiedProposal, VerifiedRemember,
};
use rusqlite::types::Value;
use rusqlite::{params, OptionalExtension, Transaction};

use super::read;
use crate::rows::UuidBytes;
use crate::search;
use crate::{append_event, insert_evidence, visible_evidence, DbResult};

/// The stored outcome for an idempotency key, or `Conflict` when the key was used for a
/// different request.
pub fn replayed(
    conn: &rusqlite::Connection,
    actor: &Actor,
    key: &str,
    request_hash: &str,
) -> Result<Option<RememberOutcome>> {
    let stored: Option<(String, String)> = conn
        .query_row(
            "SELECT request_hash, outcome FROM idempotency WHERE team_id = ?1 AND key = ?2",
            params![actor.team.as_bytes(), key],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
        .db()?;
    match stored {
        None => Ok(None),
        Some((hash, _)) if hash != request_hash => Err(StoreError::Conflict(format!(
            "idempotency key `{key}` was already used for a different request"
        ))),
        Some((_, outcome)) => serde_json::from_str(&outcome)
            .map(Some)
            .map_err(StoreError::backend),
    }
}

pub fn commit_remember(
    tx: &Transaction<'_>,
    actor: &Actor,
    request: VerifiedRemember,
    now: Timestamp,
) -> Result<RememberOutcome> {
    let VerifiedRemember {
        request,
        relationships,
    } = request;
    if let Some(key) = &request.idempotency_key {
        if let Some(outcome) = replayed(tx, actor, key, &request.request_hash)? {
            return Ok(outcome);
        }
    }
    for (predicate, single_valued) in &request.predicates {
        declare_predicate(tx, actor, predicate, *single_valued, now)?;
    }
    let mut inserted: Vec<Evidence> = Vec::with_capacity(request.evidence.len());
    let mut holds: Vec<Option<String>> = Vec::with_capacity(request.evidence.len());
    for (i, new) in request.evidence.into_iter().enumerate() {
        let hold = new.quarantine.clone();
        let mut evidence = new
            .into_evidence(EvidenceId(new_uuid_v7(now)), actor.team, actor.profile, now)
            .map_err(|e| ValidationError::new(format!("evidence[{i}].{}", e.field), e.reason))?;
        // A held item supersedes nothing: it is not current itself.
        let older = if hold.is_some() {
            Vec::new()
        } else {
            revision_standing(tx, actor, &mut evidence)?
        };
        let reason = match evidence.state {
            LifecycleState::Superseded => Some("a newer source revision is already stored"),
            _ => hold.as_deref(),
        };
        insert_evidence(tx, &evidence, reason)?;
        holds.push(hold);
        move_evidence(
            tx,
            actor,
            &older,
            LifecycleState::Superseded,
            Some("a newer source revision was remembered"),
            now,
        )?;
        inserted.push(evidence);
    }
    let mut outcomes = Vec::with_capacity(relationships.len());
    for (i, verified) in relationships.into_iter().enumerate() {
        let written = write_relationship(
            tx,
            actor,
            &verified,
            Written {
                inserted: &inserted,
                pinned_subject: None,
                kept_object: None,
                supersedes: None,
                reason: "remembered",
                field: format!("relationships[{i}]"),
            },
            now,
        )?;
        outcomes.push(written);
    }
    let outcome = RememberOutcome {
        evidence: inserted
            .iter()
            .zip(holds)
            .map(|(e, hold)| EvidenceOutcome {
                evidence_id: e.id,
                state: e.state,
                quarantined_because: hold,
            })
            .collect(),
        relationships: outcomes,
    };
    if let Some(key) = &request.idempotency_key {
        let json = serde_json::to_string(&outcome).map_err(StoreError::backend)?;
        tx.execute(
            "INSERT INTO idempotency (team_id, key, request_hash, outcome, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                actor.team.as_bytes(),
                key,
                request.request_hash,
                json,
                now.as_micros()
            ],
        )
        .db()?;
    }
    Ok(outcome)
}

/// A predicate's cardinality is declared once per team; a different redeclaration is a
/// conflict, the same one is a no-op.
fn declare_predicate(
    tx: &Transaction<'_>,
    actor: &Actor,
    predicate: &str,
    single_valued: bool,
    now: Timestamp,
) -> Result<()> {
    let existing: Option<bool> = tx
        .query_row(
            "SELECT single_valued FROM predicates WHERE team_id = ?1 AND predicate = ?2",
            params![actor.team.as_bytes(), predicate],
            |row| row.get(0),
        )
        .optional()
        .db()?;
    match existing {
        Some(declared) if declared != single_valued => Err(StoreError::Conflict(format!(
            "predicate `{predicate}` is already declared single_valued = {declared}"
        ))),
        Some(_) => Ok(()),
        None => {
            tx.execute(
                "INSERT INTO predicates (team_id, predicate, single_valued, declared_at) \
                 VALUES (?1, ?2, ?3, ?4)",
                params![
                    actor.team.as_bytes(),
                    predicate,
                    single_valued,
                    now.as_micros()
                ],
            )
            .db()?;
            Ok(())
        }
    }
}

fn is_single_valued(tx: &Transaction<'_>, actor: &Actor, predicate: &str) -> Result<bool> {
    Ok(tx
        .query_row(
            "SELECT single_valued FROM predicates WHERE team_id = ?1 AND predicate = ?2",
            params![actor.team.as_bytes(), predicate],
            |row| row.get::<_, bool>(0),
        )
        .optional()
        .db()?
        .unwrap_or(false))
}

/// A revisioned fragment: if a newer revision of its source is already stored it is
/// born superseded; otherwise the current fragments of older revisions are returned to
/// be superseded by it. Only fragments the writer can see take part: another profile's
/// private copy of a document is that profile's to revise.
fn revision_standing(
    tx: &Transaction<'_>,
    actor: &Actor,
    evidence: &mut Evidence,
) -> Result<Vec<EvidenceId>> {
    let (Some(key), Some(revision)) = (&evidence.source_key, evidence.source_revision) else {
        return Ok(Vec::new());
    };
    let newer_exists: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM evidence WHERE team_id = ?1 AND source_key = ?2 \
             AND source_revision > ?3 AND state <> 'erased' \
             AND (space = 'team' OR owner_profile_id = ?4))",
            params![
                actor.team.as_bytes(),
                key,
                revision,
                actor.profile.as_bytes()
            ],
            |row| row.get(0),
        )
        .db()?;
    if newer_exists {
        evidence.state = LifecycleState::Superseded;
        return Ok(Vec::new());
    }
    let mut stmt = tx
        .prepare_cached(
            "SELECT evidence_id FROM evidence WHERE team_id = ?1 AND source_key = ?2 \
             AND source_revision < ?3 AND state = 'current' \
             AND (space = 'team' OR owner_profile_id = ?4)",
        )
        .db()?;
    let older = stmt
        .query_map(
            params![
                actor.team.as_bytes(),
                key,
                revision,
                actor.profile.as_bytes()
            ],
            |row| Ok(EvidenceId::from_bytes(row.get::<_, UuidBytes>(0)?.0)),
        )
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    Ok(older)
}

/// Moves current evidence to `state` (all or nothing: any id that is not visible and
/// current is `NotFound`), appends the events, and recomputes what it supported.
pub fn move_evidence(
    tx: &Transaction<'_>,
    actor: &Actor,
    ids: &[EvidenceId],
    state: LifecycleState,
    reason: Option<&str>,
    at: Timestamp,
) -> Result<()> {
    for &id in ids {
        let evidence = visible_evidence(tx, actor, id)?;
        if evidence.state != LifecycleState::Current {
            return Err(StoreError::NotFound { id });
        }
        tx.execute(
            "UPDATE evidence SET state = ?3 WHERE team_id = ?1 AND evidence_id = ?2",
            params![actor.team.as_bytes(), id.as_bytes(), state.as_str()],
        )
        .db()?;
        append_event(tx, actor, id, state, at, reason)?;
    }
    let reason = format!("supporting evidence {}", state.as_str());
    recompute_support(tx, actor, ids, &reason, at)
}

/// Re-derives the standing of every relationship citing `evidence` from its supports.
fn recompute_support(
    tx: &Transaction<'_>,
    actor: &Actor,
    evidence: &[EvidenceId],
    reason: &str,
    at: Timestamp,
) -> Result<()> {
    for id in relationships_citing(tx, actor, evidence)? {
        let current = stored_standing(tx, actor, id)?;
        let next = recomputed_standing(current, &support_standings(tx, actor, id)?);
        move_to(tx, actor, id, next, reason, at)?;
    }
    Ok(())
}

fn relationships_citing(
    tx: &Transaction<'_>,
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
    let mut stmt = tx
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

fn stored_standing(tx: &Transaction<'_>, actor: &Actor, id: RelationshipId) -> Result<Standing> {
    let (tier, status): (String, String) = tx
        .query_row(
            "SELECT tier, status FROM relationships WHERE team_id = ?1 AND relationship_id = ?2",
            params![actor.team.as_bytes(), id.as_bytes()],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
        .db()?
        .ok_or(StoreError::RelationshipNotFound { id })?;
    Ok(Standing {
        tier: tier.parse()?,
        status: status.parse()?,
    })
}

fn support_standings(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: RelationshipId,
) -> Result<Vec<SupportStanding>> {
    let mut stmt = tx
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

/// Appends a transition and updates the standing columns together; no-op when the
/// standing does not change. Leaving the live statuses closes `recorded_to`.
pub fn move_to(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: RelationshipId,
    to: Standing,
    reason: &str,
    at: Timestamp,
) -> Result<()> {
    let from = stored_standing(tx, actor, id)?;
    if from == to {
        return Ok(());
    }
    let closes = matches!(
        to.status,
        RelationshipStatus::Superseded | RelationshipStatus::Retracted
    );
    tx.execute(
        "UPDATE relationships SET tier = ?3, status = ?4, version = version + 1, \
         recorded_to = CASE WHEN ?5 THEN ?6 ELSE NULL END \
         WHERE team_id = ?1 AND relationship_id = ?2",
        params![
            actor.team.as_bytes(),
            id.as_bytes(),
            to.tier.as_str(),
            to.status.as_str(),
            closes,
            at.as_micros()
        ],
    )
    .db()?;
    append_transition(tx, actor, id, Some(from), to, reason, at)
}

fn append_transition(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: RelationshipId,
    from: Option<Standing>,
    to: Standing,
    reason: &str,
    at: Timestamp,
) -> Result<()> {
    tx.execute(
        "INSERT INTO relationship_transitions (team_id, relationship_id, seq, from_tier, \
         to_tier, from_status, to_status, reason, actor_profile_id, at) VALUES (?1, ?2, \
         (SELECT COALESCE(MAX(seq), 0) + 1 FROM relationship_transitions \
          WHERE team_id = ?1 AND relationship_id = ?2), ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            actor.team.as_bytes(),
            id.as_bytes(),
            from.map(|s| s.tier.as_str()),
            to.tier.as_str(),
            from.map(|s| s.status.as_str()),
            to.status.as_str(),
            reason,
            actor.profile.as_bytes(),
            at.as_micros()
        ],
    )
    .db()?;
    Ok(())
}

/// Resolves an entity inside the actor's team by normalised name or alias: one match is
/// reused (learning new aliases), several are ambiguous (the oldest is used and the
/// claim waits for review), none creates the entity. A proposal of kind `other` matches
/// any kind; otherwise only the same kind.
fn resolve_entity(
    tx: &Transaction<'_>,
    actor: &Actor,
    entity: &EntityRef,
    now: Timestamp,
) -> Result<(EntitySummary, bool)> {
    let mut stmt = tx
        .prepare_cached(
            "SELECT DISTINCT n.entity_id, n.name FROM entity_aliases a \
             JOIN entities n ON n.team_id = a.team_id AND n.entity_id = a.entity_id \
             WHERE a.team_id = ?1 AND a.alias_key = ?2 AND (?3 = 'other' OR n.kind = ?3) \
             ORDER BY n.entity_id",
        )
        .db()?;
    let matches = stmt
        .query_map(
            params![
                actor.team.as_bytes(),
                entity.normalised,
                entity.kind.as_str()
            ],
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
    match matches.len() {
        0 => {
            let summary = EntitySummary {
                entity_id: EntityId(new_uuid_v7(now)),
                name: entity.name.clone(),
            };
            tx.execute(
                "INSERT INTO entities (team_id, entity_id, name, kind, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    actor.team.as_bytes(),
                    summary.entity_id.as_bytes(),
                    entity.name,
                    entity.kind.as_str(),
                    now.as_micros()
                ],
            )
            .db()?;
            add_aliases(tx, actor, summary.entity_id, entity, true)?;
            enqueue_entity_document(tx, actor, summary.entity_id, now)?;
            Ok((summary, false))
        }
        1 => {
            add_aliases(tx, actor, matches[0].entity_id, entity, false)?;
            enqueue_entity_document(tx, actor, matches[0].entity_id, now)?;
            Ok((matches[0].clone(), false))
        }
        _ => Ok((matches[0].clone(), true)),
    }
}

fn add_aliases(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: EntityId,
    entity: &EntityRef,
    with_name: bool,
) -> Result<()> {
    let mut insert = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO entity_aliases (team_id, alias_key, entity_id, alias) \
             VALUES (?1, ?2, ?3, ?4)",
        )
        .db()?;
    let name = with_name.then(|| (entity.name.clone(), entity.normalised.clone()));
    for (alias, key) in name.iter().chain(entity.aliases.iter()) {
        insert
            .execute(params![actor.team.as_bytes(), key, id.as_bytes(), alias])
            .db()?;
    }
    Ok(())
}

/// An entity's discovery document: its name, kind and aliases (re-queued only when
/// that text changes).
fn enqueue_entity_document(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: EntityId,
    now: Timestamp,
) -> Result<()> {
    let (name, kind): (String, String) = tx
        .query_row(
            "SELECT name, kind FROM entities WHERE team_id = ?1 AND entity_id = ?2",
            params![actor.team.as_bytes(), id.as_bytes()],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .db()?;
    let mut stmt = tx
        .prepare_cached(
            "SELECT alias FROM entity_aliases WHERE team_id = ?1 AND entity_id = ?2 \
             ORDER BY alias_key",
        )
        .db()?;
    let aliases: Vec<String> = stmt
        .query_map(params![actor.team.as_bytes(), id.as_bytes()], |row| {
            row.get(0)
        })
        .db()?
        .collect::<rusqlite::Result<Vec<String>>>()
        .db()?
        .into_iter()
        .filter(|alias| *alias != name)
        .collect();
    let mut text = format!("{name} ({kind})");
    if !aliases.is_empty() {
        text.push_str(&format!(", also called {}", aliases.join(", ")));
    }
    search::enqueue_graph_document(
        tx,
        actor.team,
        search::ENTITY_DOCUMENT,
        id.as_bytes(),
        &text,
        now,
    )
}

/// What a relationship write is attached to.
pub struct Written<'a> {
    /// Evidence inserted by this request, for index citations.
    pub inserted: &'a [Evidence],
    /// Corrections keep the old subject (and possibly object) rather than re-resolving.
    pub pinned_subject: Option<EntitySummary>,
    pub kept_object: Option<ObjectSummary>,
    pub supersedes: Option<RelationshipId>,
    pub reason: &'a str,
    /// The request item, for error messages.
    pub field: String,
}

pub fn write_relationship(
    tx: &Transaction<'_>,
    actor: &Actor,
    verified: &VerifiedProposal,
    written: Written<'_>,
    now: Timestamp,
) -> Result<RelationshipOutcome> {
    let proposal = &verified.proposal;
    let (subject, subject_ambiguous) = match written.pinned_subject {
        Some(subject) => (subject, false),
        None => resolve_entity(tx, actor, &proposal.subject, now)?,
    };
    let (object, object_ambiguous) = match (written.kept_object, &proposal.object) {
        (Some(object), _) => (object, false),
        (None, ProposedObject::Entity(entity)) => {
            let (summary, ambiguous) = resolve_entity(tx, actor, entity, now)?;
            (ObjectSummary::Entity(summary), ambiguous)
        }
        (None, ProposedObject::Value { value, .. }) => (
            ObjectSummary::Value {
                value: value.clone(),
            },
            false,
        ),
    };

    let mut supports = Vec::with_capacity(proposal.supports.len());
    let mut standings = Vec::with_capacity(proposal.supports.len());
    for (j, citation) in proposal.supports.iter().enumerate() {
        let field = format!("{}.supports[{j}]", written.field);
        let evidence = match citation.evidence {
            CitedEvidence::Index(i) => written.inserted.get(i).cloned().ok_or_else(|| {
                ValidationError::new(format!("{field}.evidence"), "no such request item")
            })?,
            CitedEvidence::Id(id) => visible_evidence(tx, actor, id)?,
        };
        let quote =
            char_span(&evidence.content, citation.start, citation.end).ok_or_else(|| {
                ValidationError::new(
                    format!("{field}.end"),
                    format!(
                        "is {}, past the end of the evidence text ({} characters)",
                        citation.end,
                        evidence.content.chars().count()
                    ),
                )
            })?;
        standings.push(SupportStanding {
            source_group: evidence.source_group.clone(),
            authority: evidence.authority,
            effective: evidence.state == LifecycleState::Current,
        });
        supports.push((evidence.id, citation.start, citation.end, quote.to_string()));
    }

    let standing = initial_standing(
        verified.verdict,
        &standings,
        subject_ambiguous || object_ambiguous,
    );
    let id = RelationshipId(new_uuid_v7(now));
    let group = semantic_group_key(
        subject.entity_id,
        &proposal.predicate,
        &object,
        proposal.polarity,
    );
    let object_value = match &object {
        ObjectSummary::Value { value } => {
            Some(serde_json::to_string(value).map_err(StoreError::backend)?)
        }
        ObjectSummary::Entity(_) => None,
    };
    tx.execute(
        "INSERT INTO relationships (team_id, relationship_id, owner_profile_id, \
         subject_entity_id, predicate, predicate_surface, object_entity_id, object_value, \
         object_key, polarity, valid_from, valid_to, recorded_at, recorded_to, \
         semantic_group_key, supersedes, verdict, tier, status, version) VALUES (?1, ?2, ?3, \
         ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, NULL, ?14, ?15, ?16, ?17, ?18, 1)",
        params![
            actor.team.as_bytes(),
            id.as_bytes(),
            actor.profile.as_bytes(),
            subject.entity_id.as_bytes(),
            proposal.predicate,
            proposal.predicate_surface,
            object.entity_id().map(|e| e.as_bytes().to_vec()),
            object_value,
            object.identity_key(),
            proposal.polarity.as_str(),
            proposal.valid_from.map(Timestamp::as_micros),
            proposal.valid_to.map(Timestamp::as_micros),
            now.as_micros(),
            group,
            written.supersedes.map(|s| s.as_bytes().to_vec()),
            verified.verdict.as_str(),
            standing.tier.as_str(),
            standing.status.as_str(),
        ],
    )
    .db()?;
    let mut insert_support = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO relationship_supports (team_id, relationship_id, \
             evidence_id, span_start, span_end, quote) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .db()?;
    for (evidence_id, start, end, quote) in &supports {
        insert_support
            .execute(params![
                actor.team.as_bytes(),
                id.as_bytes(),
                evidence_id.as_bytes(),
                *start as i64,
                *end as i64,
                quote
            ])
            .db()?;
    }
    let mut insert_event = tx
        .prepare_cached(
            "INSERT INTO verification_events (team_id, relationship_id, seq, verdict, \
             confidence, verifier, rationale, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .db()?;
    for (seq, event) in verified.events.iter().enumerate() {
        insert_event
            .execute(params![
                actor.team.as_bytes(),
                id.as_bytes(),
                seq as i64 + 1,
                event.verdict.as_str(),
                event.confidence,
                event.verifier,
                event.rationale,
                event.at.as_micros()
            ])
            .db()?;
    }
    append_transition(tx, actor, id, None, standing, written.reason, now)?;
    let negation = match proposal.polarity {
        Polarity::Positive => "",
        Polarity::Negative => "not ",
    };
    let document = format!(
        "{} {negation}{} {}",
        subject.name,
        proposal.predicate_surface,
        object.display()
    );
    search::enqueue_graph_document(
        tx,
        actor.team,
        search::RELATIONSHIP_DOCUMENT,
        id.as_bytes(),
        &document,
        now,
    )?;

    let mut status = standing.status;
    if status == RelationshipStatus::Active && is_single_valued(tx, actor, &proposal.predicate)? {
        let position = format!("{}|{}", object.identity_key(), proposal.polarity.as_str());
        let rivals = rivals(tx, actor, subject.entity_id, &proposal.predicate, id)?;
        for action in single_valued_conflicts(actor.profile, &position, &rivals) {
            match action {
                ConflictAction::Supersede(old) => {
                    let tier = stored_standing(tx, actor, old)?.tier;
                    let reason = format!("superseded by its author's newer claim {id}");
                    move_to(
                        tx,
                        actor,
                        old,
                        status_with(tier, RelationshipStatus::Superseded),
                        &reason,
                        now,
                    )?;
                }
                ConflictAction::Dispute(other) => {
                    let tier = stored_standing(tx, actor, other)?.tier;
                    let reason = format!("disputed by another author's claim {id}");
                    move_to(
                        tx,
                        actor,
                        other,
                        status_with(tier, RelationshipStatus::Disputed),
                        &reason,
                        now,
                    )?;
                    status = RelationshipStatus::Disputed;
                }
            }
        }
        if status == RelationshipStatus::Disputed {
            move_to(
                tx,
                actor,
                id,
                status_with(standing.tier, status),
                "conflicts with another author's claim on a single-valued predicate",
                now,
            )?;
        }
    }
    Ok(RelationshipOutcome {
        relationship_id: id,
        subject_entity_id: subject.entity_id,
        object_entity_id: object.entity_id(),
        verdict: verified.verdict,
        tier: standing.tier,
        status,
    })
}

fn status_with(tier: Tier, status: RelationshipStatus) -> Standing {
    Standing { tier, status }
}

/// Other claims about the same subject and predicate, with their positions.
fn rivals(
    tx: &Transaction<'_>,
    actor: &Actor,
    subject: EntityId,
    predicate: &str,
    except: RelationshipId,
) -> Result<Vec<Rival>> {
    let mut stmt = tx
        .prepare_cached(
            "SELECT relationship_id, owner_profile_id, object_key || '|' || polarity, status \
             FROM relationships WHERE team_id = ?1 AND subject_entity_id = ?2 \
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

/// A corrected version: fenced on the version the caller read; the old record is
/// superseded when its own author corrects it, and otherwise left as it is (the
/// single-valued conflict rule may dispute both).
pub fn commit_correction(
    tx: &Transaction<'_>,
    actor: &Actor,
    correction: VerifiedCorrection,
    now: Timestamp,
) -> Result<RelationshipOutcome> {
    let old = read::relationships_where(
        tx,
        actor,
        &Default::default(),
        " AND r.relationship_id = ?",
        vec![Value::Blob(correction.relationship_id.as_bytes().to_vec())],
    )
    .db()?
    .pop()
    .ok_or(StoreError::RelationshipNotFound {
        id: correction.relationship_id,
    })?;
    if old.version != correction.expected_version {
        return Err(StoreError::Conflict(format!(
            "relationship {} is at version {}, not {}; trace it again and retry",
            old.relationship_id, old.version, correction.expected_version
        )));
    }
    if matches!(
        old.status,
        RelationshipStatus::Superseded | RelationshipStatus::Retracted
    ) {
        return Err(StoreError::Conflict(format!(
            "relationship {} is already {}",
            old.relationship_id, old.status
        )));
    }
    let outcome = write_relationship(
        tx,
        actor,
        &correction.proposal,
        Written {
            inserted: &[],
            pinned_subject: Some(old.subject.clone()),
            kept_object: correction.kept_object,
            supersedes: Some(old.relationship_id),
            reason: &correction.reason,
            field: "correction".into(),
        },
        now,
    )?;
    if old.owner_profile_id == actor.profile {
        let current = stored_standing(tx, actor, old.relationship_id)?;
        let reason = format!(
            "corrected by {}: {}",
            outcome.relationship_id, correction.reason
        );
        move_to(
            tx,
            actor,
            old.relationship_id,
            status_with(current.tier, RelationshipStatus::Superseded),
            &reason,
            now,
        )?;
    }
    Ok(outcome)
}

/// Physically erases the actor's own private evidence (SPEC §3 `forget`): the text, its
/// full-text entry, vector and refs; quotes of it in supports; relationships supported
/// by nothing else (their logs may go only after an erasure tombstone is written). The
/// evidence row stays as a content-free tombstone with an `erased` event.
pub fn forget(
    tx: &Transaction<'_>,
    actor: &Actor,
    ids: &[EvidenceId],
    at: Timestamp,
) -> Result<()> {
    for &id in ids {
        let evidence = visible_evidence(tx, actor, id)?;
        if evidence.state == LifecycleState::Erased {
            return Err(StoreError::NotFound { id });
        }
        if evidence.space != Space::Private || evidence.owner != actor.profile {
            return Err(StoreError::NotPermitted {
                id,
                action: "forgotten",
                reason:
                    "only its owner's private evidence can be erased; retract team evidence instead"
                        .into(),
            });
        }
        let doc: i64 = tx
            .query_row(
                "SELECT doc FROM evidence WHERE team_id = ?1 AND evidence_id = ?2",
                params![actor.team.as_bytes(), id.as_bytes()],
                |row| row.get(0),
            )
            .db()?;
        tx.execute(
            "INSERT INTO evidence_fts (evidence_fts, rowid, content) VALUES ('delete', ?1, ?2)",
            params![doc, evidence.content],
        )
        .db()?;
        tx.execute(
            "UPDATE evidence_content SET content = '' WHERE doc = ?1",
            params![doc],
        )
        .db()?;
        tx.execute(
            "UPDATE evidence SET state = 'erased', content_hash = '', source = '', \
             source_group = '', source_key = NULL, source_revision = NULL, labels = '[]', \
             refs = '[]' WHERE doc = ?1",
            params![doc],
        )
        .db()?;
        tx.execute(
            "DELETE FROM evidence_refs WHERE team_id = ?1 AND evidence_id = ?2",
            params![actor.team.as_bytes(), id.as_bytes()],
        )
        .db()?;
        tx.execute("DELETE FROM search_documents WHERE doc = ?1", params![doc])
            .db()?;
        tx.execute(
            "UPDATE relationship_supports SET quote = NULL WHERE team_id = ?1 AND evidence_id = ?2",
            params![actor.team.as_bytes(), id.as_bytes()],
        )
        .db()?;
        append_event(tx, actor, id, LifecycleState::Erased, at, None)?;
    }
    for relationship in relationships_citing(tx, actor, ids)? {
        let only_erased: bool = tx
            .query_row(
                "SELECT NOT EXISTS (SELECT 1 FROM relationship_supports s \
                 JOIN evidence e ON e.team_id = s.team_id AND e.evidence_id = s.evidence_id \
                 WHERE s.team_id = ?1 AND s.relationship_id = ?2 AND e.state <> 'erased')",
                params![actor.team.as_bytes(), relationship.as_bytes()],
                |row| row.get(0),
            )
            .db()?;
        if only_erased {
            erase_relationship(tx, actor, relationship, at)?;
        } else {
            let current = stored_standing(tx, actor, relationship)?;
            let next = recomputed_standing(current, &support_standings(tx, actor, relationship)?);
            move_to(
                tx,
                actor,
                relationship,
                next,
                "supporting evidence erased",
                at,
            )?;
        }
    }
    Ok(())
}

fn erase_relationship(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: RelationshipId,
    at: Timestamp,
) -> Result<()> {
    let team = actor.team.as_bytes();
    tx.execute(
        "INSERT INTO relationship_erasures (team_id, relationship_id, erased_at) \
         VALUES (?1, ?2, ?3)",
        params![team, id.as_bytes(), at.as_micros()],
    )
    .db()?;
    tx.execute(
        "DELETE FROM graph_documents WHERE team_id = ?1 AND target_kind = ?2 AND target_id = ?3",
        params![team, search::RELATIONSHIP_DOCUMENT, id.as_bytes()],
    )
    .db()?;
    for table in [
        "verification_events",
        "relationship_transitions",
        "relationship_supports",
        "relationships",
    ] {
        tx.execute(
            &format!("DELETE FROM {table} WHERE team_id = ?1 AND relationship_id = ?2"),
            params![team, id.as_bytes()],
        )
        .db()?;
    }
    Ok(())
}
