//! Writing the semantic layer inside one transaction: the backend gathers the facts the
//! core's decisions need (resolution matches, support standings, rivals), calls
//! `mnem_core::graph`, and appends what it decides. Callers hold the team's graph lock
//! (`lock_team_graph`), so these read-then-write steps never interleave within a team.

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
use tokio_postgres::Transaction;
use uuid::Uuid;

use crate::rows::{col, parsed};
use crate::search;
use crate::{append_event, insert_evidence, visible_evidence, DbResult};

/// The stored outcome for an idempotency key, or `Conflict` when the key was used for a
/// different request.
pub async fn replayed(
    tx: &Transaction<'_>,
    actor: &Actor,
    key: &str,
    request_hash: &str,
) -> Result<Option<RememberOutcome>> {
    let stored = tx
        .query_opt(
            "SELECT request_hash, outcome FROM idempotency WHERE team_id = $1 AND key = $2",
            &[&actor.team.0, &key],
        )
        .await
        .db()?;
    let Some(row) = stored else { return Ok(None) };
    let hash: String = col(&row, 0)?;
    if hash != request_hash {
        return Err(StoreError::Conflict(format!(
            "idempotency key `{key}` was already used for a different request"
        )));
    }
    serde_json::from_str(&col::<String>(&row, 1)?)
        .map(Some)
        .map_err(StoreError::backend)
}

pub async fn commit_remember(
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
        if let Some(outcome) = replayed(tx, actor, key, &request.request_hash).await? {
            return Ok(outcome);
        }
    }
    for (predicate, single_valued) in &request.predicates {
        declare_predicate(tx, actor, predicate, *single_valued, now).await?;
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
            revision_standing(tx, actor, &mut evidence).await?
        };
        let reason = match evidence.state {
            LifecycleState::Superseded => Some("a newer source revision is already stored"),
            _ => hold.as_deref(),
        };
        insert_evidence(tx, &evidence, reason).await?;
        holds.push(hold);
        move_evidence(
            tx,
            actor,
            &older,
            LifecycleState::Superseded,
            Some("a newer source revision was remembered"),
            now,
        )
        .await?;
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
        )
        .await?;
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
             VALUES ($1, $2, $3, $4, $5)",
            &[
                &actor.team.0,
                key,
                &request.request_hash,
                &json,
                &now.as_micros(),
            ],
        )
        .await
        .db()?;
    }
    Ok(outcome)
}

/// A predicate's cardinality is declared once per team; a different redeclaration is a
/// conflict, the same one is a no-op.
async fn declare_predicate(
    tx: &Transaction<'_>,
    actor: &Actor,
    predicate: &str,
    single_valued: bool,
    now: Timestamp,
) -> Result<()> {
    let existing = declared_cardinality(tx, actor, predicate).await?;
    match existing {
        Some(declared) if declared != single_valued => Err(StoreError::Conflict(format!(
            "predicate `{predicate}` is already declared single_valued = {declared}"
        ))),
        Some(_) => Ok(()),
        None => {
            tx.execute(
                "INSERT INTO predicates (team_id, predicate, single_valued, declared_at) \
                 VALUES ($1, $2, $3, $4)",
                &[&actor.team.0, &predicate, &single_valued, &now.as_micros()],
            )
            .await
            .db()?;
            Ok(())
        }
    }
}

async fn declared_cardinality(
    tx: &Transaction<'_>,
    actor: &Actor,
    predicate: &str,
) -> Result<Option<bool>> {
    tx.query_opt(
        "SELECT single_valued FROM predicates WHERE team_id = $1 AND predicate = $2",
        &[&actor.team.0, &predicate],
    )
    .await
    .db()?
    .map(|row| col(&row, 0))
    .transpose()
}

/// A revisioned fragment: if a newer revision of its source is already stored it is
/// born superseded; otherwise the current fragments of older revisions are returned to
/// be superseded by it. Only fragments the writer can see take part.
async fn revision_standing(
    tx: &Transaction<'_>,
    actor: &Actor,
    evidence: &mut Evidence,
) -> Result<Vec<EvidenceId>> {
    let (Some(key), Some(revision)) = (&evidence.source_key, evidence.source_revision) else {
        return Ok(Vec::new());
    };
    let newer_exists: bool = col(
        &tx.query_one(
            "SELECT EXISTS (SELECT 1 FROM evidence WHERE team_id = $1 AND source_key = $2 \
             AND source_revision > $3 AND state <> 'erased' \
             AND (space = 'team' OR owner_profile_id = $4))",
            &[&actor.team.0, key, &revision, &actor.profile.0],
        )
        .await
        .db()?,
        0,
    )?;
    if newer_exists {
        evidence.state = LifecycleState::Superseded;
        return Ok(Vec::new());
    }
    tx.query(
        "SELECT evidence_id FROM evidence WHERE team_id = $1 AND source_key = $2 \
         AND source_revision < $3 AND state = 'current' \
         AND (space = 'team' OR owner_profile_id = $4)",
        &[&actor.team.0, key, &revision, &actor.profile.0],
    )
    .await
    .db()?
    .iter()
    .map(|row| Ok(EvidenceId(col(row, 0)?)))
    .collect()
}

/// Moves current evidence to `state` (all or nothing: any id that is not visible and
/// current is `NotFound`), appends the events, drops its embedding job, and recomputes
/// what it supported.
pub async fn move_evidence(
    tx: &Transaction<'_>,
    actor: &Actor,
    ids: &[EvidenceId],
    state: LifecycleState,
    reason: Option<&str>,
    at: Timestamp,
) -> Result<()> {
    for &id in ids {
        let evidence = visible_evidence(tx, actor, id).await?;
        if evidence.state != LifecycleState::Current {
            return Err(StoreError::NotFound { id });
        }
        tx.execute(
            "UPDATE evidence SET state = $3 WHERE team_id = $1 AND evidence_id = $2",
            &[&actor.team.0, &id.0, &state.as_str()],
        )
        .await
        .db()?;
        search::dequeue(tx, actor.team, search::EVIDENCE_DOCUMENT, id.0).await?;
        append_event(tx, actor, id, state, at, reason).await?;
    }
    let reason = format!("supporting evidence {}", state.as_str());
    recompute_support(tx, actor, ids, &reason, at).await
}

/// Re-derives the standing of every relationship citing `evidence` from its supports.
async fn recompute_support(
    tx: &Transaction<'_>,
    actor: &Actor,
    evidence: &[EvidenceId],
    reason: &str,
    at: Timestamp,
) -> Result<()> {
    for id in relationships_citing(tx, actor, evidence).await? {
        let current = stored_standing(tx, actor, id).await?;
        let next = recomputed_standing(current, &support_standings(tx, actor, id).await?);
        move_to(tx, actor, id, next, reason, at).await?;
    }
    Ok(())
}

async fn relationships_citing(
    tx: &Transaction<'_>,
    actor: &Actor,
    evidence: &[EvidenceId],
) -> Result<Vec<RelationshipId>> {
    if evidence.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<Uuid> = evidence.iter().map(|id| id.0).collect();
    tx.query(
        "SELECT DISTINCT relationship_id FROM relationship_supports \
         WHERE team_id = $1 AND evidence_id = ANY ($2) ORDER BY relationship_id",
        &[&actor.team.0, &ids],
    )
    .await
    .db()?
    .iter()
    .map(|row| Ok(RelationshipId(col(row, 0)?)))
    .collect()
}

async fn stored_standing(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: RelationshipId,
) -> Result<Standing> {
    let row = tx
        .query_opt(
            "SELECT tier, status FROM relationships WHERE team_id = $1 AND relationship_id = $2",
            &[&actor.team.0, &id.0],
        )
        .await
        .db()?
        .ok_or(StoreError::RelationshipNotFound { id })?;
    Ok(Standing {
        tier: parsed(&row, 0)?,
        status: parsed(&row, 1)?,
    })
}

async fn support_standings(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: RelationshipId,
) -> Result<Vec<SupportStanding>> {
    tx.query(
        "SELECT e.source_group, e.authority, e.state FROM relationship_supports s \
         JOIN evidence e ON e.team_id = s.team_id AND e.evidence_id = s.evidence_id \
         WHERE s.team_id = $1 AND s.relationship_id = $2",
        &[&actor.team.0, &id.0],
    )
    .await
    .db()?
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

/// Appends a transition and updates the standing columns together; no-op when the
/// standing does not change. Leaving the live statuses closes `recorded_to`.
pub async fn move_to(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: RelationshipId,
    to: Standing,
    reason: &str,
    at: Timestamp,
) -> Result<()> {
    let from = stored_standing(tx, actor, id).await?;
    if from == to {
        return Ok(());
    }
    let closes = matches!(
        to.status,
        RelationshipStatus::Superseded | RelationshipStatus::Retracted
    );
    tx.execute(
        "UPDATE relationships SET tier = $3, status = $4, version = version + 1, \
         recorded_to = CASE WHEN $5 THEN $6::bigint ELSE NULL END \
         WHERE team_id = $1 AND relationship_id = $2",
        &[
            &actor.team.0,
            &id.0,
            &to.tier.as_str(),
            &to.status.as_str(),
            &closes,
            &at.as_micros(),
        ],
    )
    .await
    .db()?;
    append_transition(tx, actor, id, Some(from), to, reason, at).await
}

async fn append_transition(
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
         to_tier, from_status, to_status, reason, actor_profile_id, at) VALUES ($1, $2, \
         (SELECT COALESCE(MAX(seq), 0) + 1 FROM relationship_transitions \
          WHERE team_id = $1 AND relationship_id = $2), $3, $4, $5, $6, $7, $8, $9)",
        &[
            &actor.team.0,
            &id.0,
            &from.map(|s| s.tier.as_str()),
            &to.tier.as_str(),
            &from.map(|s| s.status.as_str()),
            &to.status.as_str(),
            &reason,
            &actor.profile.0,
            &at.as_micros(),
        ],
    )
    .await
    .db()?;
    Ok(())
}

/// Resolves an entity inside the actor's team by normalised name or alias: one match is
/// reused (learning new aliases), several are ambiguous (the oldest is used and the
/// claim waits for review), none creates the entity. A proposal of kind `other` matches
/// any kind; otherwise only the same kind.
async fn resolve_entity(
    tx: &Transaction<'_>,
    actor: &Actor,
    entity: &EntityRef,
    now: Timestamp,
) -> Result<(EntitySummary, bool)> {
    let matches = tx
        .query(
            "SELECT DISTINCT n.entity_id, n.name FROM entity_aliases a \
             JOIN entities n ON n.team_id = a.team_id AND n.entity_id = a.entity_id \
             WHERE a.team_id = $1 AND a.alias_key = $2 AND ($3 = 'other' OR n.kind = $3) \
             ORDER BY n.entity_id",
            &[&actor.team.0, &entity.normalised, &entity.kind.as_str()],
        )
        .await
        .db()?
        .iter()
        .map(|row| {
            Ok(EntitySummary {
                entity_id: EntityId(col(row, 0)?),
                name: col(row, 1)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    match matches.len() {
        0 => {
            let summary = EntitySummary {
                entity_id: EntityId(new_uuid_v7(now)),
                name: entity.name.clone(),
            };
            tx.execute(
                "INSERT INTO entities (team_id, entity_id, name, kind, created_at) \
                 VALUES ($1, $2, $3, $4, $5)",
                &[
                    &actor.team.0,
                    &summary.entity_id.0,
                    &entity.name,
                    &entity.kind.as_str(),
                    &now.as_micros(),
                ],
            )
            .await
            .db()?;
            add_aliases(tx, actor, summary.entity_id, entity, true).await?;
            enqueue_entity_document(tx, actor, summary.entity_id, now).await?;
            Ok((summary, false))
        }
        1 => {
            add_aliases(tx, actor, matches[0].entity_id, entity, false).await?;
            enqueue_entity_document(tx, actor, matches[0].entity_id, now).await?;
            Ok((matches[0].clone(), false))
        }
        _ => Ok((matches[0].clone(), true)),
    }
}

async fn add_aliases(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: EntityId,
    entity: &EntityRef,
    with_name: bool,
) -> Result<()> {
    let name = with_name.then(|| (entity.name.clone(), entity.normalised.clone()));
    for (alias, key) in name.iter().chain(entity.aliases.iter()) {
        tx.execute(
            "INSERT INTO entity_aliases (team_id, alias_key, entity_id, alias) \
             VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            &[&actor.team.0, key, &id.0, alias],
        )
        .await
        .db()?;
    }
    Ok(())
}

/// An entity's discovery document: its name, kind and aliases (re-queued only when
/// that text changes).
async fn enqueue_entity_document(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: EntityId,
    now: Timestamp,
) -> Result<()> {
    let row = tx
        .query_one(
            "SELECT name, kind FROM entities WHERE team_id = $1 AND entity_id = $2",
            &[&actor.team.0, &id.0],
        )
        .await
        .db()?;
    let (name, kind): (String, String) = (col(&row, 0)?, col(&row, 1)?);
    let aliases: Vec<String> = tx
        .query(
            "SELECT alias FROM entity_aliases WHERE team_id = $1 AND entity_id = $2 \
             ORDER BY alias_key",
            &[&actor.team.0, &id.0],
        )
        .await
        .db()?
        .iter()
        .map(|row| col::<String>(row, 0))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .filter(|alias| *alias != name)
        .collect();
    let mut text = format!("{name} ({kind})");
    if !aliases.is_empty() {
        text.push_str(&format!(", also called {}", aliases.join(", ")));
    }
    search::enqueue_graph_document(tx, actor.team, search::ENTITY_DOCUMENT, id.0, &text, now).await
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

pub async fn write_relationship(
    tx: &Transaction<'_>,
    actor: &Actor,
    verified: &VerifiedProposal,
    written: Written<'_>,
    now: Timestamp,
) -> Result<RelationshipOutcome> {
    let proposal = &verified.proposal;
    let (subject, subject_ambiguous) = match written.pinned_subject {
        Some(subject) => (subject, false),
        None => resolve_entity(tx, actor, &proposal.subject, now).await?,
    };
    let (object, object_ambiguous) = match (written.kept_object, &proposal.object) {
        (Some(object), _) => (object, false),
        (None, ProposedObject::Entity(entity)) => {
            let (summary, ambiguous) = resolve_entity(tx, actor, entity, now).await?;
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
            CitedEvidence::Id(id) => visible_evidence(tx, actor, id).await?,
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
         semantic_group_key, supersedes, verdict, tier, status, version) VALUES ($1, $2, $3, \
         $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULL, $14, $15, $16, $17, $18, 1)",
        &[
            &actor.team.0,
            &id.0,
            &actor.profile.0,
            &subject.entity_id.0,
            &proposal.predicate,
            &proposal.predicate_surface,
            &object.entity_id().map(|e| e.0),
            &object_value,
            &object.identity_key(),
            &proposal.polarity.as_str(),
            &proposal.valid_from.map(Timestamp::as_micros),
            &proposal.valid_to.map(Timestamp::as_micros),
            &now.as_micros(),
            &group,
            &written.supersedes.map(|s| s.0),
            &verified.verdict.as_str(),
            &standing.tier.as_str(),
            &standing.status.as_str(),
        ],
    )
    .await
    .db()?;
    for (evidence_id, start, end, quote) in &supports {
        tx.execute(
            "INSERT INTO relationship_supports (team_id, relationship_id, evidence_id, \
             span_start, span_end, quote) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT DO NOTHING",
            &[
                &actor.team.0,
                &id.0,
                &evidence_id.0,
                &(*start as i64),
                &(*end as i64),
                quote,
            ],
        )
        .await
        .db()?;
    }
    for (seq, event) in verified.events.iter().enumerate() {
        tx.execute(
            "INSERT INTO verification_events (team_id, relationship_id, seq, verdict, \
             confidence, verifier, rationale, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            &[
                &actor.team.0,
                &id.0,
                &(seq as i64 + 1),
                &event.verdict.as_str(),
                &event.confidence,
                &event.verifier,
                &event.rationale,
                &event.at.as_micros(),
            ],
        )
        .await
        .db()?;
    }
    append_transition(tx, actor, id, None, standing, written.reason, now).await?;
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
        id.0,
        &document,
        now,
    )
    .await?;

    let mut status = standing.status;
    let single_valued = declared_cardinality(tx, actor, &proposal.predicate)
        .await?
        .unwrap_or(false);
    if status == RelationshipStatus::Active && single_valued {
        let position = format!("{}|{}", object.identity_key(), proposal.polarity.as_str());
        let rivals = rivals(tx, actor, subject.entity_id, &proposal.predicate, id).await?;
        for action in single_valued_conflicts(actor.profile, &position, &rivals) {
            match action {
                ConflictAction::Supersede(old) => {
                    let tier = stored_standing(tx, actor, old).await?.tier;
                    let reason = format!("superseded by its author's newer claim {id}");
                    move_to(
                        tx,
                        actor,
                        old,
                        status_with(tier, RelationshipStatus::Superseded),
                        &reason,
                        now,
                    )
                    .await?;
                }
                ConflictAction::Dispute(other) => {
                    let tier = stored_standing(tx, actor, other).await?.tier;
                    let reason = format!("disputed by another author's claim {id}");
                    move_to(
                        tx,
                        actor,
                        other,
                        status_with(tier, RelationshipStatus::Disputed),
                        &reason,
                        now,
                    )
                    .await?;
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
            )
            .await?;
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
async fn rivals(
    tx: &Transaction<'_>,
    actor: &Actor,
    subject: EntityId,
    predicate: &str,
    except: RelationshipId,
) -> Result<Vec<Rival>> {
    tx.query(
        "SELECT relationship_id, owner_profile_id, object_key || '|' || polarity, status \
         FROM relationships WHERE team_id = $1 AND subject_entity_id = $2 \
         AND predicate = $3 AND relationship_id <> $4 ORDER BY relationship_id",
        &[&actor.team.0, &subject.0, &predicate, &except.0],
    )
    .await
    .db()?
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

/// A corrected version: fenced on the version the caller read; the old record is
/// superseded when its own author corrects it, and otherwise left as it is.
pub async fn commit_correction(
    tx: &Transaction<'_>,
    actor: &Actor,
    correction: VerifiedCorrection,
    now: Timestamp,
) -> Result<RelationshipOutcome> {
    let old =
        super::relationship(tx, actor, correction.relationship_id, &Default::default()).await?;
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
    )
    .await?;
    if old.owner_profile_id == actor.profile {
        let current = stored_standing(tx, actor, old.relationship_id).await?;
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
        )
        .await?;
    }
    Ok(outcome)
}

/// Physically erases the actor's own private evidence (SPEC §3 `forget`): the text (and
/// with it the full-text entry and its statistics, by trigger), vector and refs; quotes
/// of it in supports; relationships supported by nothing else (their logs may go only
/// after an erasure tombstone is written). The row stays as a content-free tombstone.
pub async fn forget(
    tx: &Transaction<'_>,
    actor: &Actor,
    ids: &[EvidenceId],
    at: Timestamp,
) -> Result<()> {
    for &id in ids {
        let evidence = visible_evidence(tx, actor, id).await?;
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
        let team = &actor.team.0;
        tx.execute(
            "UPDATE evidence SET content = '', state = 'erased', content_hash = '', source = '', \
             source_group = '', source_key = NULL, source_revision = NULL, labels = '[]', \
             refs = '[]' WHERE team_id = $1 AND evidence_id = $2",
            &[team, &id.0],
        )
        .await
        .db()?;
        for sql in [
            "DELETE FROM evidence_refs WHERE team_id = $1 AND evidence_id = $2",
            "DELETE FROM evidence_vectors WHERE team_id = $1 AND evidence_id = $2",
            "UPDATE relationship_supports SET quote = NULL WHERE team_id = $1 AND evidence_id = $2",
        ] {
            tx.execute(sql, &[team, &id.0]).await.db()?;
        }
        search::dequeue(tx, actor.team, search::EVIDENCE_DOCUMENT, id.0).await?;
        append_event(tx, actor, id, LifecycleState::Erased, at, None).await?;
    }
    for relationship in relationships_citing(tx, actor, ids).await? {
        let only_erased: bool = col(
            &tx.query_one(
                "SELECT NOT EXISTS (SELECT 1 FROM relationship_supports s \
                 JOIN evidence e ON e.team_id = s.team_id AND e.evidence_id = s.evidence_id \
                 WHERE s.team_id = $1 AND s.relationship_id = $2 AND e.state <> 'erased')",
                &[&actor.team.0, &relationship.0],
            )
            .await
            .db()?,
            0,
        )?;
        if only_erased {
            erase_relationship(tx, actor, relationship, at).await?;
        } else {
            let current = stored_standing(tx, actor, relationship).await?;
            let next =
                recomputed_standing(current, &support_standings(tx, actor, relationship).await?);
            move_to(
                tx,
                actor,
                relationship,
                next,
                "supporting evidence erased",
                at,
            )
            .await?;
        }
    }
    Ok(())
}

async fn erase_relationship(
    tx: &Transaction<'_>,
    actor: &Actor,
    id: RelationshipId,
    at: Timestamp,
) -> Result<()> {
    let team = &actor.team.0;
    tx.execute(
        "INSERT INTO relationship_erasures (team_id, relationship_id, erased_at) \
         VALUES ($1, $2, $3)",
        &[team, &id.0, &at.as_micros()],
    )
    .await
    .db()?;
    tx.execute(
        "DELETE FROM graph_documents WHERE team_id = $1 AND target_kind = $2 AND target_id = $3",
        &[team, &search::RELATIONSHIP_DOCUMENT, &id.0],
    )
    .await
    .db()?;
    search::dequeue(tx, actor.team, search::RELATIONSHIP_DOCUMENT, id.0).await?;
    for table in [
        "verification_events",
        "relationship_transitions",
        "relationship_supports",
        "relationships",
    ] {
        tx.execute(
            &format!("DELETE FROM {table} WHERE team_id = $1 AND relationship_id = $2"),
            &[team, &id.0],
        )
        .await
        .db()?;
    }
    Ok(())
}
