//! One claim written: endpoints resolved, cited spans read, the initial standing decided,
//! the row and its discovery document inserted, single-valued conflicts settled.

use mnem_core::graph::{
    char_span, initial_standing, semantic_group_key, single_valued_conflicts, CitedEvidence,
    ConflictAction, EntityRef, EntitySummary, ObjectSummary, Polarity, Proposal, ProposedObject,
    RelationshipOutcome, RelationshipStatus, SupportStanding,
};
use mnem_core::{
    Actor, EntityId, Evidence, LifecycleState, RelationshipId, Timestamp, ValidationError,
};

use super::{
    move_status, Claim, DiscoveryDocument, EntityNames, GraphRows, NewRelationship, Support,
    Transition,
};
use crate::{new_uuid_v7, Result, StoreError, VerifiedProposal};

/// What a relationship write is attached to.
pub(super) struct Written<'a> {
    /// Evidence inserted by this request, for index citations.
    pub(super) inserted: &'a [Evidence],
    /// Corrections keep the old subject (and possibly object) rather than re-resolving.
    pub(super) pinned_subject: Option<EntitySummary>,
    pub(super) kept_object: Option<ObjectSummary>,
    pub(super) supersedes: Option<RelationshipId>,
    pub(super) reason: &'a str,
    /// The request item, for error messages.
    pub(super) field: String,
}

/// Writes one claim: resolves its endpoints, reads the cited spans, decides the initial
/// standing, inserts the relationship with its supports, events, first transition and
/// discovery document, then settles single-valued conflicts.
pub(super) async fn write_relationship<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    verified: &VerifiedProposal,
    written: Written<'_>,
    now: Timestamp,
) -> Result<RelationshipOutcome> {
    let proposal = &verified.proposal;
    let endpoints = resolve_endpoints(rows, actor, proposal, &written, now).await?;
    let (supports, standings) = read_supports(rows, actor, proposal, &written).await?;
    let standing = initial_standing(verified.verdict, &standings, endpoints.ambiguous);
    let Endpoints {
        subject, object, ..
    } = endpoints;
    let id = RelationshipId(new_uuid_v7(now));
    let object_value = match &object {
        ObjectSummary::Value { value } => {
            Some(serde_json::to_string(value).map_err(StoreError::backend)?)
        }
        ObjectSummary::Entity(_) => None,
    };
    let row = NewRelationship {
        id,
        claim: Claim::from(proposal),
        subject: subject.entity_id,
        object: &object,
        object_value,
        semantic_group_key: semantic_group_key(
            subject.entity_id,
            &proposal.predicate,
            &object,
            proposal.polarity,
        ),
        supersedes: written.supersedes,
        verdict: verified.verdict,
        standing,
        recorded_at: now,
        supports: &supports,
        events: &verified.events,
    };
    rows.insert_relationship(actor, &row).await?;
    let birth = Transition {
        relationship_id: id,
        from: None,
        to: standing,
        reason: written.reason,
        at: now,
    };
    rows.append_transition(actor, &birth).await?;
    enqueue_relationship_document(rows, actor, id, &subject.name, &row.claim, &object, now).await?;

    let status = if standing.status == RelationshipStatus::Active {
        settle_conflicts(rows, actor, proposal, id, subject.entity_id, &object, now).await?
    } else {
        standing.status
    };
    Ok(RelationshipOutcome {
        relationship_id: id,
        subject_entity_id: subject.entity_id,
        object_entity_id: object.entity_id(),
        verdict: verified.verdict,
        tier: standing.tier,
        status,
    })
}

/// A claim's subject and object as stored entities (or the object's value), and whether
/// either name matched more than one entity.
struct Endpoints {
    subject: EntitySummary,
    object: ObjectSummary,
    ambiguous: bool,
}

/// The subject (pinned by a correction, or resolved by name) and the object (kept by a
/// correction, resolved by name, or a value).
async fn resolve_endpoints<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    proposal: &Proposal,
    written: &Written<'_>,
    now: Timestamp,
) -> Result<Endpoints> {
    let (subject, subject_ambiguous) = match &written.pinned_subject {
        Some(subject) => (subject.clone(), false),
        None => resolve_entity(rows, actor, &proposal.subject, now).await?,
    };
    let (object, object_ambiguous) = match (&written.kept_object, &proposal.object) {
        (Some(object), _) => (object.clone(), false),
        (None, ProposedObject::Entity(entity)) => {
            let (summary, ambiguous) = resolve_entity(rows, actor, entity, now).await?;
            (ObjectSummary::Entity(summary), ambiguous)
        }
        (None, ProposedObject::Value { value, .. }) => (
            ObjectSummary::Value {
                value: value.clone(),
            },
            false,
        ),
    };
    Ok(Endpoints {
        subject,
        object,
        ambiguous: subject_ambiguous || object_ambiguous,
    })
}

/// Each cited span with its quote, and what each citing item brings to the standing.
/// A span past the end of its text is refused, naming the request field.
async fn read_supports<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    proposal: &Proposal,
    written: &Written<'_>,
) -> Result<(Vec<Support>, Vec<SupportStanding>)> {
    let mut supports = Vec::with_capacity(proposal.supports.len());
    let mut standings = Vec::with_capacity(proposal.supports.len());
    for (j, citation) in proposal.supports.iter().enumerate() {
        let field = format!("{}.supports[{j}]", written.field);
        let evidence = match citation.evidence {
            CitedEvidence::Index(i) => written.inserted.get(i).cloned().ok_or_else(|| {
                ValidationError::new(format!("{field}.evidence"), "no such request item")
            })?,
            CitedEvidence::Id(id) => rows.visible_evidence(actor, id).await?,
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
        supports.push(Support {
            evidence_id: evidence.id,
            start: citation.start,
            end: citation.end,
            quote: quote.to_string(),
        });
    }
    Ok((supports, standings))
}

/// An active claim `id` on a single-valued predicate meets the live claims on the same
/// subject and predicate: the author's own older claim is superseded, another author's
/// different one is disputed together with this one. Returns this claim's status.
async fn settle_conflicts<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    proposal: &Proposal,
    id: RelationshipId,
    subject: EntityId,
    object: &ObjectSummary,
    now: Timestamp,
) -> Result<RelationshipStatus> {
    let single_valued = rows
        .predicate_cardinality(actor, &proposal.predicate)
        .await?
        .unwrap_or(false);
    if !single_valued {
        return Ok(RelationshipStatus::Active);
    }
    let position = format!("{}|{}", object.identity_key(), proposal.polarity.as_str());
    let rivals = rows.rivals(actor, subject, &proposal.predicate, id).await?;
    let mut status = RelationshipStatus::Active;
    for action in single_valued_conflicts(actor.profile, &position, &rivals) {
        match action {
            ConflictAction::Supersede(old) => {
                let reason = format!("superseded by its author's newer claim {id}");
                move_status(
                    rows,
                    actor,
                    old,
                    RelationshipStatus::Superseded,
                    &reason,
                    now,
                )
                .await?;
            }
            ConflictAction::Dispute(other) => {
                let reason = format!("disputed by another author's claim {id}");
                move_status(
                    rows,
                    actor,
                    other,
                    RelationshipStatus::Disputed,
                    &reason,
                    now,
                )
                .await?;
                status = RelationshipStatus::Disputed;
            }
        }
    }
    if status == RelationshipStatus::Disputed {
        move_status(
            rows,
            actor,
            id,
            status,
            "conflicts with another author's claim on a single-valued predicate",
            now,
        )
        .await?;
    }
    Ok(status)
}

/// Resolves an entity inside the actor's team by normalised name or alias: one match is
/// reused (learning new aliases), several are ambiguous (the oldest is used and the
/// claim waits for review), none creates the entity. A proposal of kind `other` matches
/// any kind; otherwise only the same kind. Returns the entity and whether it was
/// ambiguous.
async fn resolve_entity<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    entity: &EntityRef,
    now: Timestamp,
) -> Result<(EntitySummary, bool)> {
    let matches = rows
        .entities_matching(actor, &entity.normalised, entity.kind)
        .await?;
    let resolved = match matches.as_slice() {
        [] => {
            let created = EntitySummary {
                entity_id: EntityId(new_uuid_v7(now)),
                name: entity.name.clone(),
            };
            rows.insert_entity(actor, &created, entity.kind, now)
                .await?;
            let mut aliases = vec![(entity.name.clone(), entity.normalised.clone())];
            aliases.extend(entity.aliases.iter().cloned());
            rows.insert_aliases(actor, created.entity_id, &aliases)
                .await?;
            created
        }
        [known] => {
            rows.insert_aliases(actor, known.entity_id, &entity.aliases)
                .await?;
            known.clone()
        }
        [oldest, ..] => return Ok((oldest.clone(), true)),
    };
    enqueue_entity_document(rows, actor, resolved.entity_id, now).await?;
    Ok((resolved, false))
}

/// An entity's discovery document: its name, kind and aliases (re-queued only when
/// that text changes).
pub(crate) async fn enqueue_entity_document<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    id: EntityId,
    now: Timestamp,
) -> Result<()> {
    let EntityNames {
        name,
        kind,
        aliases,
    } = rows.entity_names(actor, id).await?;
    let mut text = format!("{name} ({kind})");
    let others: Vec<&str> = aliases
        .iter()
        .map(String::as_str)
        .filter(|alias| *alias != name)
        .collect();
    if !others.is_empty() {
        text.push_str(&format!(", also called {}", others.join(", ")));
    }
    rows.enqueue_discovery_document(actor.team, DiscoveryDocument::Entity(id), &text, now)
        .await
}

/// A relationship's discovery document: its endpoints and predicate, never evidence text.
pub(crate) async fn enqueue_relationship_document<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    id: RelationshipId,
    subject_name: &str,
    claim: &Claim<'_>,
    object: &ObjectSummary,
    now: Timestamp,
) -> Result<()> {
    let negation = match claim.polarity {
        Polarity::Positive => "",
        Polarity::Negative => "not ",
    };
    let document = format!(
        "{subject_name} {negation}{} {}",
        claim.predicate_surface,
        object.display()
    );
    rows.enqueue_discovery_document(
        actor.team,
        DiscoveryDocument::Relationship(id),
        &document,
        now,
    )
    .await
}
