//! The semantic layer's write transactions, written once for every backend.
//!
//! A backend implements [`GraphRows`]: the row reads and appends of one open
//! transaction, always inside the actor's team. The functions here fix what is read,
//! which `mnem_core::graph` decision it feeds, and what is appended in what order; the
//! backend opens and commits the transaction around them. Callers hold the team's write
//! serialisation (SQLite's single writer, PostgreSQL's per-team advisory lock), so the
//! read-then-write steps never interleave with another graph write of the team.

use mnem_core::graph::{
    char_span, initial_standing, recomputed_standing, semantic_group_key, single_valued_conflicts,
    CitedEvidence, ConflictAction, EntityKind, EntityRef, EntitySummary, EvidenceOutcome,
    ObjectSummary, Polarity, Proposal, ProposedObject, Relationship, RelationshipOutcome,
    RelationshipStatus, RememberOutcome, Rival, Standing, SupportStanding, Verdict,
    VerificationEvent,
};
use mnem_core::{
    Actor, EntityId, Evidence, EvidenceId, LifecycleState, RelationshipId, Space, TeamId,
    Timestamp, ValidationError,
};

use crate::dedup::{self, NewRecord, ProvenanceRows, Withdrawal};
use crate::{
    new_uuid_v7, Result, StoreError, VerifiedCorrection, VerifiedProposal, VerifiedRemember,
};

/// The row operations of one open write transaction. Every method acts inside the
/// actor's team only; none decides anything.
///
/// The futures are not required to be `Send`: SQLite runs them on its writer thread,
/// and PostgreSQL's concrete futures are `Send` by themselves.
#[allow(async_fn_in_trait)]
pub trait GraphRows: ProvenanceRows {
    /// `(request hash, outcome JSON)` stored under an idempotency key.
    async fn idempotency_record(
        &self,
        actor: &Actor,
        key: &str,
    ) -> Result<Option<(String, String)>>;
    async fn insert_idempotency_record(
        &self,
        actor: &Actor,
        key: &str,
        request_hash: &str,
        outcome: &str,
        at: Timestamp,
    ) -> Result<()>;

    /// The declared cardinality of a predicate (`Some(true)`: single-valued).
    async fn predicate_cardinality(&self, actor: &Actor, predicate: &str) -> Result<Option<bool>>;
    async fn insert_predicate(
        &self,
        actor: &Actor,
        predicate: &str,
        single_valued: bool,
        at: Timestamp,
    ) -> Result<()>;

    /// Evidence the actor may see; `NotFound` for anything else (another team's id
    /// looks the same).
    async fn visible_evidence(&self, actor: &Actor, id: EvidenceId) -> Result<Evidence>;
    /// Inserts new evidence with its first lifecycle event (`reason`) and, when it is
    /// current, its search document.
    async fn insert_evidence(&self, evidence: &Evidence, reason: Option<&str>) -> Result<()>;
    /// Whether the actor can see a fragment (in any state but erased) of a revision of
    /// `source_key` newer than `revision`.
    async fn newer_revision_exists(
        &self,
        actor: &Actor,
        source_key: &str,
        revision: i64,
    ) -> Result<bool>;
    /// The current fragments of older revisions of `source_key` the actor can see.
    async fn older_current_revisions(
        &self,
        actor: &Actor,
        source_key: &str,
        revision: i64,
    ) -> Result<Vec<EvidenceId>>;
    /// Sets an evidence item's state and appends the lifecycle event.
    async fn set_evidence_state(
        &self,
        actor: &Actor,
        id: EvidenceId,
        state: LifecycleState,
        at: Timestamp,
        reason: Option<&str>,
    ) -> Result<()>;
    /// Physically erases an item's content and everything derived from it (search
    /// entries, vectors, refs, quotes of it in supports), leaves the row as a
    /// content-free tombstone and appends the `erased` event.
    async fn erase_evidence(&self, actor: &Actor, evidence: &Evidence, at: Timestamp)
        -> Result<()>;

    /// Relationships citing any of `evidence`, in id order, each once.
    async fn relationships_citing(
        &self,
        actor: &Actor,
        evidence: &[EvidenceId],
    ) -> Result<Vec<RelationshipId>>;
    /// `RelationshipNotFound` when the relationship is not the team's.
    async fn standing(&self, actor: &Actor, id: RelationshipId) -> Result<Standing>;
    /// The standing of each cited evidence item.
    async fn support_standings(
        &self,
        actor: &Actor,
        id: RelationshipId,
    ) -> Result<Vec<SupportStanding>>;
    /// Whether any cited evidence item is not erased.
    async fn has_unerased_support(&self, actor: &Actor, id: RelationshipId) -> Result<bool>;
    /// Writes the standing columns and bumps the version; `closed_at` sets
    /// `recorded_to` (cleared when `None`).
    async fn update_standing(
        &self,
        actor: &Actor,
        id: RelationshipId,
        to: Standing,
        closed_at: Option<Timestamp>,
    ) -> Result<()>;
    async fn append_transition(&self, actor: &Actor, transition: &Transition<'_>) -> Result<()>;
    /// Other claims about `subject` with `predicate`, in id order.
    async fn rivals(
        &self,
        actor: &Actor,
        subject: EntityId,
        predicate: &str,
        except: RelationshipId,
    ) -> Result<Vec<Rival>>;
    /// The authoritative record; `RelationshipNotFound` when it is not the team's.
    async fn relationship(&self, actor: &Actor, id: RelationshipId) -> Result<Relationship>;
    /// The relationship row, its supports and its verification events.
    async fn insert_relationship(&self, actor: &Actor, row: &NewRelationship<'_>) -> Result<()>;
    /// Writes the erasure tombstone, then deletes the relationship, its supports, logs
    /// and discovery document.
    async fn erase_relationship(
        &self,
        actor: &Actor,
        id: RelationshipId,
        at: Timestamp,
    ) -> Result<()>;
    /// Whether any relationship names the entity as subject or object.
    async fn entity_in_use(&self, actor: &Actor, id: EntityId) -> Result<bool>;
    /// Deletes an entity, its aliases and its discovery document.
    async fn erase_entity(&self, actor: &Actor, id: EntityId) -> Result<()>;

    /// Entities whose name or an alias normalises to `normalised`, of `kind` (any kind
    /// for `other`), in id order.
    async fn entities_matching(
        &self,
        actor: &Actor,
        normalised: &str,
        kind: EntityKind,
    ) -> Result<Vec<EntitySummary>>;
    async fn insert_entity(
        &self,
        actor: &Actor,
        entity: &EntitySummary,
        kind: EntityKind,
        at: Timestamp,
    ) -> Result<()>;
    /// Adds `(alias, normalised alias)` pairs, ignoring those already known.
    async fn insert_aliases(
        &self,
        actor: &Actor,
        id: EntityId,
        aliases: &[(String, String)],
    ) -> Result<()>;
    /// An entity's name, kind and aliases (in normalised order).
    async fn entity_names(&self, actor: &Actor, id: EntityId) -> Result<EntityNames>;
    /// Queues a discovery document for embedding, unless the same text is queued or
    /// embedded already.
    async fn enqueue_discovery_document(
        &self,
        team: TeamId,
        target: DiscoveryDocument,
        text: &str,
        at: Timestamp,
    ) -> Result<()>;
}

/// What a discovery document describes (evidence has search documents of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryDocument {
    Entity(EntityId),
    Relationship(RelationshipId),
}

/// What a relationship row says besides its endpoints; never changed after the write.
pub struct Claim<'a> {
    pub predicate: &'a str,
    pub predicate_surface: &'a str,
    pub polarity: Polarity,
    pub valid_from: Option<Timestamp>,
    pub valid_to: Option<Timestamp>,
}

impl<'a> From<&'a Proposal> for Claim<'a> {
    fn from(proposal: &'a Proposal) -> Self {
        Self {
            predicate: &proposal.predicate,
            predicate_surface: &proposal.predicate_surface,
            polarity: proposal.polarity,
            valid_from: proposal.valid_from,
            valid_to: proposal.valid_to,
        }
    }
}

/// A relationship as decided, ready to insert.
pub struct NewRelationship<'a> {
    pub id: RelationshipId,
    pub claim: Claim<'a>,
    pub subject: EntityId,
    pub object: &'a ObjectSummary,
    /// The typed value as JSON, for value objects.
    pub object_value: Option<String>,
    pub semantic_group_key: String,
    pub supersedes: Option<RelationshipId>,
    pub verdict: Verdict,
    pub standing: Standing,
    pub recorded_at: Timestamp,
    pub supports: &'a [Support],
    pub events: &'a [VerificationEvent],
}

/// A cited span of evidence, with the quote it covers.
pub struct Support {
    pub evidence_id: EvidenceId,
    pub start: usize,
    pub end: usize,
    pub quote: String,
}

/// One appended lifecycle step of a relationship (`from` is `None` at birth).
pub struct Transition<'a> {
    pub relationship_id: RelationshipId,
    pub from: Option<Standing>,
    pub to: Standing,
    pub reason: &'a str,
    pub at: Timestamp,
}

pub struct EntityNames {
    pub name: String,
    pub kind: String,
    pub aliases: Vec<String>,
}

/// The stored outcome for an idempotency key, or `Conflict` when the key was used for a
/// different request.
pub async fn replayed<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    key: &str,
    request_hash: &str,
) -> Result<Option<RememberOutcome>> {
    match rows.idempotency_record(actor, key).await? {
        None => Ok(None),
        Some((hash, _)) if hash != request_hash => Err(StoreError::Conflict(format!(
            "idempotency key `{key}` was already used for a different request"
        ))),
        Some((_, outcome)) => serde_json::from_str(&outcome)
            .map(Some)
            .map_err(StoreError::backend),
    }
}

/// A structured remember: predicates declared, evidence inserted (superseding older
/// source revisions), relationships written and conflicts settled; the outcome is
/// stored under the idempotency key.
pub async fn commit_remember<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    request: VerifiedRemember,
    now: Timestamp,
) -> Result<RememberOutcome> {
    let VerifiedRemember {
        request,
        relationships,
    } = request;
    if let Some(key) = &request.idempotency_key {
        if let Some(outcome) = replayed(rows, actor, key, &request.request_hash).await? {
            return Ok(outcome);
        }
    }
    for (predicate, single_valued) in &request.predicates {
        declare_predicate(rows, actor, predicate, *single_valued, now).await?;
    }
    // Items the request's claims cite by position: only an exact copy may absorb one
    // (its spans count code points of this text).
    let cited: std::collections::HashSet<usize> = relationships
        .iter()
        .flat_map(|r| &r.proposal.supports)
        .filter_map(|s| match s.evidence {
            CitedEvidence::Index(i) => Some(i),
            CitedEvidence::Id(_) => None,
        })
        .collect();
    let mut inserted: Vec<Evidence> = Vec::with_capacity(request.evidence.len());
    let mut holds: Vec<Option<String>> = Vec::with_capacity(request.evidence.len());
    let mut duplicates = Vec::with_capacity(request.evidence.len());
    // Every text of the request held at once, in one order; then item by item.
    let mut texts: Vec<String> = request
        .evidence
        .iter()
        .map(|new| mnem_core::evidence::content_hash(&new.content))
        .collect();
    texts.sort_unstable();
    texts.dedup();
    rows.hold_texts(actor, &texts).await?;
    for (i, new) in request.evidence.into_iter().enumerate() {
        let hold = new.quarantine.clone();
        let evidence = new
            .into_evidence(EvidenceId(new_uuid_v7(now)), actor.team, actor.profile, now)
            .map_err(|e| ValidationError::new(format!("evidence[{i}].{}", e.field), e.reason))?;
        // One item at a time: a later item may repeat one this request just inserted.
        let record = NewRecord {
            evidence,
            hold: hold.clone(),
            exact_text: cited.contains(&i),
        };
        let mut settled = dedup::settle_held(rows, actor, vec![record], now).await?;
        let Some((mut evidence, _)) = settled.fresh.pop() else {
            settled.record(rows, actor).await?;
            let answer = settled.only_answer()?;
            holds.push(None);
            duplicates.push(answer.duplicate);
            inserted.push(answer.evidence);
            continue;
        };
        duplicates.push(None);
        // A held item supersedes nothing: it is not current itself.
        let older = if hold.is_some() {
            Vec::new()
        } else {
            revision_standing(rows, actor, &mut evidence).await?
        };
        let reason = match evidence.state {
            LifecycleState::Superseded => Some("a newer source revision is already stored"),
            _ => hold.as_deref(),
        };
        rows.insert_evidence(&evidence, reason).await?;
        holds.push(hold);
        move_evidence(
            rows,
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
        let written = Written {
            inserted: &inserted,
            pinned_subject: None,
            kept_object: None,
            supersedes: None,
            reason: "remembered",
            field: format!("relationships[{i}]"),
        };
        outcomes.push(write_relationship(rows, actor, &verified, written, now).await?);
    }
    let outcome = RememberOutcome {
        evidence: inserted
            .iter()
            .zip(holds)
            .zip(duplicates)
            .map(|((e, hold), duplicate)| EvidenceOutcome {
                evidence_id: e.id,
                state: e.state,
                quarantined_because: hold,
                duplicate,
            })
            .collect(),
        relationships: outcomes,
    };
    if let Some(key) = &request.idempotency_key {
        let json = serde_json::to_string(&outcome).map_err(StoreError::backend)?;
        rows.insert_idempotency_record(actor, key, &request.request_hash, &json, now)
            .await?;
    }
    Ok(outcome)
}

/// Retracts the actor's writes of each item (all or nothing: an id that is not visible
/// and current is `NotFound`). An item another write still stands for stays current —
/// its lifecycle log says whose write was withdrawn and how many stand — and is returned;
/// the rest are retracted with what they supported recomputed.
pub async fn retract_evidence<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    ids: &[EvidenceId],
    reason: Option<&str>,
    at: Timestamp,
) -> Result<Vec<EvidenceId>> {
    let mut whole = Vec::new();
    let mut kept = Vec::new();
    for &id in ids {
        let evidence = rows.visible_evidence(actor, id).await?;
        if evidence.state != LifecycleState::Current {
            // Visible, so the caller may know it exists: say where it stands.
            return Err(StoreError::Conflict(format!(
                "evidence {id} is already {}: only current evidence can be retracted",
                evidence.state.as_str()
            )));
        }
        match dedup::withdraw(rows, actor, id).await? {
            Withdrawal::Whole => whole.push(id),
            Withdrawal::Kept { standing } => {
                let note = format!(
                    "a write was retracted; {standing} other write(s) of this text still stand{}",
                    reason.map(|r| format!(": {r}")).unwrap_or_default()
                );
                rows.set_evidence_state(actor, id, LifecycleState::Current, at, Some(&note))
                    .await?;
                kept.push(id);
            }
        }
    }
    move_evidence(rows, actor, &whole, LifecycleState::Retracted, reason, at).await?;
    Ok(kept)
}

/// A predicate's cardinality is declared once per team; a different redeclaration is a
/// conflict, the same one is a no-op.
async fn declare_predicate<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    predicate: &str,
    single_valued: bool,
    now: Timestamp,
) -> Result<()> {
    match rows.predicate_cardinality(actor, predicate).await? {
        Some(declared) if declared != single_valued => Err(StoreError::Conflict(format!(
            "predicate `{predicate}` is already declared single_valued = {declared}"
        ))),
        Some(_) => Ok(()),
        None => {
            rows.insert_predicate(actor, predicate, single_valued, now)
                .await
        }
    }
}

/// A revisioned fragment: if a newer revision of its source is already stored it is
/// born superseded; otherwise the current fragments of older revisions are returned to
/// be superseded by it. Only fragments the writer can see take part: another profile's
/// private copy of a document is that profile's to revise.
async fn revision_standing<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    evidence: &mut Evidence,
) -> Result<Vec<EvidenceId>> {
    let (Some(key), Some(revision)) = (&evidence.source_key, evidence.source_revision) else {
        return Ok(Vec::new());
    };
    if rows.newer_revision_exists(actor, key, revision).await? {
        evidence.state = LifecycleState::Superseded;
        return Ok(Vec::new());
    }
    rows.older_current_revisions(actor, key, revision).await
}

/// A plain write's revisioned fragments, settled before the batch is inserted (a
/// structured write settles its own, one item at a time, in [`revision_standing`]): a
/// fragment is born superseded when a newer revision of its source is stored or comes in
/// the same batch (its answer says so); returns the current fragments of older revisions
/// that the batch's newest revision of each source supersedes, for
/// [`supersede_older_revisions`] once the batch is inserted. Held fragments take no part.
pub async fn place_revisions<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    settled: &mut dedup::Settled,
) -> Result<Vec<EvidenceId>> {
    let mut newest: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
    for (evidence, hold) in &settled.fresh {
        if let (None, Some(key), Some(revision)) =
            (hold, &evidence.source_key, evidence.source_revision)
        {
            let entry = newest.entry(key.clone()).or_insert(revision);
            *entry = (*entry).max(revision);
        }
    }
    let mut born_superseded = Vec::new();
    for (evidence, hold) in settled.fresh.iter_mut() {
        let (None, Some(key), Some(revision)) =
            (&*hold, &evidence.source_key, evidence.source_revision)
        else {
            continue;
        };
        if revision < newest[key] || rows.newer_revision_exists(actor, key, revision).await? {
            evidence.state = LifecycleState::Superseded;
            *hold = Some("a newer source revision is already stored".into());
            born_superseded.push(evidence.id);
        }
    }
    for answer in &mut settled.answers {
        if born_superseded.contains(&answer.evidence.id) {
            answer.evidence.state = LifecycleState::Superseded;
        }
    }
    let mut older = Vec::new();
    for (key, revision) in &newest {
        let standing = settled.fresh.iter().any(|(e, _)| {
            e.source_key.as_ref() == Some(key)
                && e.source_revision == Some(*revision)
                && e.state == LifecycleState::Current
        });
        if standing {
            older.extend(rows.older_current_revisions(actor, key, *revision).await?);
        }
    }
    Ok(older)
}

/// Supersedes the fragments [`place_revisions`] found, once the newer ones are stored,
/// and re-assesses what they supported.
pub async fn supersede_older_revisions<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    older: &[EvidenceId],
    at: Timestamp,
) -> Result<()> {
    if older.is_empty() {
        return Ok(());
    }
    move_evidence(
        rows,
        actor,
        older,
        LifecycleState::Superseded,
        Some("a newer source revision was remembered"),
        at,
    )
    .await
}

/// Moves current evidence to `state` (all or nothing: any id that is not visible and
/// current is `NotFound`), appends the events, and recomputes what it supported.
pub async fn move_evidence<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    ids: &[EvidenceId],
    state: LifecycleState,
    reason: Option<&str>,
    at: Timestamp,
) -> Result<()> {
    for &id in ids {
        let evidence = rows.visible_evidence(actor, id).await?;
        if evidence.state != LifecycleState::Current {
            return Err(StoreError::NotFound { id });
        }
        rows.set_evidence_state(actor, id, state, at, reason)
            .await?;
    }
    let reason = format!("supporting evidence {}", state.as_str());
    for relationship in rows.relationships_citing(actor, ids).await? {
        recompute_support(rows, actor, relationship, &reason, at).await?;
    }
    Ok(())
}

/// Returns held evidence to recall (all or nothing: an id that is not visible and
/// quarantined is refused): it becomes current — or superseded, when a newer revision of
/// its source arrived while it was held — supersedes older current revisions as a write
/// would have, and the relationships it supports are re-assessed. The event records who
/// released it and why.
pub async fn release_evidence<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    ids: &[EvidenceId],
    reason: &str,
    at: Timestamp,
) -> Result<()> {
    for &id in ids {
        let mut evidence = rows.visible_evidence(actor, id).await?;
        if evidence.state != LifecycleState::Quarantined {
            return Err(StoreError::Conflict(format!(
                "evidence {id} is {}, not quarantined: only held evidence can be released",
                evidence.state.as_str()
            )));
        }
        evidence.state = LifecycleState::Current;
        let older = revision_standing(rows, actor, &mut evidence).await?;
        rows.set_evidence_state(actor, id, evidence.state, at, Some(reason))
            .await?;
        move_evidence(
            rows,
            actor,
            &older,
            LifecycleState::Superseded,
            Some("a newer source revision was released"),
            at,
        )
        .await?;
    }
    for relationship in rows.relationships_citing(actor, ids).await? {
        recompute_support(
            rows,
            actor,
            relationship,
            "supporting evidence released",
            at,
        )
        .await?;
    }
    Ok(())
}

/// Re-derives a relationship's standing from its supports.
async fn recompute_support<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    id: RelationshipId,
    reason: &str,
    at: Timestamp,
) -> Result<()> {
    let current = rows.standing(actor, id).await?;
    let next = recomputed_standing(current, &rows.support_standings(actor, id).await?);
    move_to(rows, actor, id, next, reason, at).await
}

/// Updates the standing and appends the transition together; no-op when the standing
/// does not change. Leaving the live statuses closes `recorded_to`.
async fn move_to<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    id: RelationshipId,
    to: Standing,
    reason: &str,
    at: Timestamp,
) -> Result<()> {
    let from = rows.standing(actor, id).await?;
    if from == to {
        return Ok(());
    }
    let closes = matches!(
        to.status,
        RelationshipStatus::Superseded | RelationshipStatus::Retracted
    );
    rows.update_standing(actor, id, to, closes.then_some(at))
        .await?;
    let transition = Transition {
        relationship_id: id,
        from: Some(from),
        to,
        reason,
        at,
    };
    rows.append_transition(actor, &transition).await
}

/// Keeps a relationship's tier and moves it to `status`.
async fn move_status<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    id: RelationshipId,
    status: RelationshipStatus,
    reason: &str,
    at: Timestamp,
) -> Result<()> {
    let tier = rows.standing(actor, id).await?.tier;
    move_to(rows, actor, id, Standing { tier, status }, reason, at).await
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

/// What a relationship write is attached to.
struct Written<'a> {
    /// Evidence inserted by this request, for index citations.
    inserted: &'a [Evidence],
    /// Corrections keep the old subject (and possibly object) rather than re-resolving.
    pinned_subject: Option<EntitySummary>,
    kept_object: Option<ObjectSummary>,
    supersedes: Option<RelationshipId>,
    reason: &'a str,
    /// The request item, for error messages.
    field: String,
}

/// Resolves the endpoints, reads the cited spans, decides the initial standing, inserts
/// the relationship with its supports, events, first transition and discovery
/// document, then settles single-valued conflicts.
async fn write_relationship<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    verified: &VerifiedProposal,
    written: Written<'_>,
    now: Timestamp,
) -> Result<RelationshipOutcome> {
    let proposal = &verified.proposal;
    let (subject, subject_ambiguous) = match written.pinned_subject {
        Some(subject) => (subject, false),
        None => resolve_entity(rows, actor, &proposal.subject, now).await?,
    };
    let (object, object_ambiguous) = match (written.kept_object, &proposal.object) {
        (Some(object), _) => (object, false),
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

    let standing = initial_standing(
        verified.verdict,
        &standings,
        subject_ambiguous || object_ambiguous,
    );
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

    let mut status = standing.status;
    if status == RelationshipStatus::Active
        && rows
            .predicate_cardinality(actor, &proposal.predicate)
            .await?
            .unwrap_or(false)
    {
        let position = format!("{}|{}", object.identity_key(), proposal.polarity.as_str());
        let rivals = rows
            .rivals(actor, subject.entity_id, &proposal.predicate, id)
            .await?;
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

/// A corrected version: fenced on the version the caller read; the old record is
/// superseded when its own author corrects it, and otherwise left as it is (the
/// single-valued conflict rule may dispute both).
pub async fn commit_correction<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    correction: VerifiedCorrection,
    now: Timestamp,
) -> Result<RelationshipOutcome> {
    let old = rows.relationship(actor, correction.relationship_id).await?;
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
    let written = Written {
        inserted: &[],
        pinned_subject: Some(old.subject.clone()),
        kept_object: correction.kept_object,
        supersedes: Some(old.relationship_id),
        reason: &correction.reason,
        field: "correction".into(),
    };
    let outcome = write_relationship(rows, actor, &correction.proposal, written, now).await?;
    if old.owner_profile_id == actor.profile {
        let reason = format!(
            "corrected by {}: {}",
            outcome.relationship_id, correction.reason
        );
        move_status(
            rows,
            actor,
            old.relationship_id,
            RelationshipStatus::Superseded,
            &reason,
            now,
        )
        .await?;
    }
    Ok(outcome)
}

/// Physically erases the actor's own private evidence (CONTRACT §3 `forget`) and what
/// derives from it: relationships supported by nothing else are erased (after a
/// tombstone), the others have their support recomputed; entities that only the erased
/// relationships named go too (their names came from the forgotten request).
pub async fn forget<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    ids: &[EvidenceId],
    at: Timestamp,
) -> Result<()> {
    for &id in ids {
        let evidence = rows.visible_evidence(actor, id).await?;
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
        rows.erase_evidence(actor, &evidence, at).await?;
    }
    let mut endpoints = Vec::new();
    for relationship in rows.relationships_citing(actor, ids).await? {
        if rows.has_unerased_support(actor, relationship).await? {
            recompute_support(rows, actor, relationship, "supporting evidence erased", at).await?;
        } else {
            let erased = rows.relationship(actor, relationship).await?;
            endpoints.push(erased.subject.entity_id);
            endpoints.extend(erased.object.entity_id());
            rows.erase_relationship(actor, relationship, at).await?;
        }
    }
    endpoints.sort();
    endpoints.dedup();
    for entity in endpoints {
        if !rows.entity_in_use(actor, entity).await? {
            rows.erase_entity(actor, entity).await?;
        }
    }
    Ok(())
}
