//! Memory packs, exported and imported once for every backend: a backend implements
//! [`PackRows`] (a few listings and the profile lookups of one open transaction), and
//! [`export`] / [`import`] fix what is read and replayed through the same row operations
//! every other write uses ([`GraphRows`]), so derived state (search documents, discovery
//! documents, the lexical index) is made exactly as a write makes it. The format and its
//! checks are `mnem_core::pack`'s.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use mnem_core::evidence::content_hash;
use mnem_core::graph::{
    char_span, normalise_name, EntityKind, EntitySummary, ObjectSummary, Standing, Tier, Verdict,
};
use mnem_core::pack::{
    Pack, PackError, PackEvidence, PackHeader, PackObject, PackPredicate, PackProfile,
    PackRelationship, PackSelection, PackSpan, PACK_FORMAT, PACK_VERSION,
};
use mnem_core::{
    Actor, EntityId, Evidence, EvidenceId, LifecycleEvent, LifecycleState, NewEvidence, ProfileId,
    RelationshipId, Timestamp,
};
use serde::Serialize;

use crate::dedup::{settle_held, NewRecord};
use crate::graph_write::{
    enqueue_entity_document, enqueue_relationship_document, Claim, GraphRows, NewRelationship,
    Support, Transition,
};
use crate::trace_read::TraceRows;
use crate::{new_uuid_v7, GraphView, Result, StoreError};

/// Reads every row of a log: trace bounds its reads, a pack holds the whole history.
const WHOLE_LOG: usize = i32::MAX as usize;

/// The listings and profile lookups a pack needs, inside the actor's team.
#[allow(async_fn_in_trait)]
pub trait PackRows {
    async fn team_name(&self, actor: &Actor) -> Result<String>;
    /// Every profile of the team, by id.
    async fn profiles(&self, actor: &Actor) -> Result<Vec<(ProfileId, String)>>;
    /// The team's profile called `name`, created with `id` at `at` when there is none.
    async fn ensure_profile(
        &self,
        actor: &Actor,
        name: &str,
        id: ProfileId,
        at: Timestamp,
    ) -> Result<ProfileId>;
    /// Evidence the actor can see, in every state but erased, oldest recorded first
    /// (then by id).
    async fn evidence_ids(&self, actor: &Actor) -> Result<Vec<EvidenceId>>;
    /// The team's relationships with their verdicts, oldest recorded first (then by id).
    async fn relationship_verdicts(&self, actor: &Actor) -> Result<Vec<(RelationshipId, Verdict)>>;
    /// The lifecycle log of one evidence item, oldest first.
    async fn evidence_events(&self, actor: &Actor, id: EvidenceId) -> Result<Vec<LifecycleEvent>>;
    /// Inserts new records as [`GraphRows::insert_evidence`] does one (each with its
    /// first lifecycle event and `reason`), in as few statements as the backend can: an
    /// import's evidence arrives in bulk, and per-statement upkeep (PostgreSQL's team term
    /// statistics) must not be paid once per item.
    async fn insert_evidence_batch(&self, records: &[(&Evidence, Option<&str>)]) -> Result<()>;
}

/// How an import treats the pack's relationships.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportMode {
    /// Relationships land as `candidate`s (their status kept, their verification events
    /// kept as the exporter's record): nothing reaches discovery paths or the tier signal
    /// until this team verifies it by writing it again with its evidence.
    Review,
    /// Tiers, statuses and the whole transition history are kept as exported.
    Trusted,
}

/// What an import wrote, and what it found already stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PackImport {
    /// Evidence written with the pack's id.
    pub evidence_added: usize,
    /// Current items of the pack that screening held at import (stored `quarantined`,
    /// out of recall until a writer releases them); set by the service.
    pub evidence_held: usize,
    /// Evidence whose id the team already holds with the same text (a second import).
    pub evidence_present: usize,
    /// Evidence whose text the team already holds under another id: recorded as another
    /// write of that item (content de-duplication), not a second item.
    pub evidence_merged: usize,
    pub predicates_added: usize,
    pub entities_added: usize,
    /// Entities the team already knows by the same name and kind (aliases added).
    pub entities_matched: usize,
    pub entities_present: usize,
    pub relationships_added: usize,
    pub relationships_present: usize,
}

/// The actor's memory (what it can see), sliced by `selection`, as a pack. Relationships
/// are kept only whole: with every cited item in the slice and the record they correct.
/// With `max_bytes`, the export stops with [`StoreError::PackOverBound`] as soon as the
/// lines it has read pass the bound, before reading (or holding) the rest.
pub async fn export<R: GraphRows + TraceRows + PackRows>(
    rows: &R,
    actor: &Actor,
    selection: PackSelection,
    exported_at: Timestamp,
    max_bytes: Option<usize>,
) -> Result<Pack> {
    let mut size = PackSize::new(max_bytes);
    let mut evidence = Vec::new();
    for id in rows.evidence_ids(actor).await? {
        let record = rows.visible_evidence(actor, id).await?;
        if !selection.admits(&record.scope, record.observed_at) {
            continue;
        }
        let history = rows.evidence_events(actor, id).await?;
        let writes = rows.writes(actor, id).await?;
        let item = PackEvidence {
            evidence_id: record.id,
            owner: record.owner,
            content: record.content,
            kind: record.kind,
            source_type: record.source_type,
            source: record.source,
            authority: record.authority,
            source_group: record.source_group,
            source_key: record.source_key,
            source_revision: record.source_revision,
            labels: record.labels,
            refs: record.refs,
            scope: record.scope,
            space: record.space,
            observed_at: record.observed_at,
            recorded_at: record.recorded_at,
            expires_at: record.expires_at,
            state: record.state,
            history,
            writes,
        };
        size.add(|| item.line_bytes())?;
        evidence.push(item);
    }
    let in_pack: HashSet<EvidenceId> = evidence.iter().map(|e| e.evidence_id).collect();

    let view = GraphView::default();
    let mut relationships: Vec<PackRelationship> = Vec::new();
    let mut kept: HashSet<RelationshipId> = HashSet::new();
    for (id, verdict) in rows.relationship_verdicts(actor).await? {
        let spans = TraceRows::cited_spans(rows, actor, id, &view).await?;
        let whole = !spans.is_empty() && spans.iter().all(|s| in_pack.contains(&s.evidence_id));
        let record = TraceRows::relationship(rows, actor, id, &view).await?;
        if !whole
            || record
                .supersedes
                .is_some_and(|prior| !kept.contains(&prior))
        {
            continue;
        }
        let mut verification_events = rows.verification_events(actor, id, None, WHOLE_LOG).await?;
        verification_events.reverse();
        let mut transitions = rows.transitions(actor, id, None, WHOLE_LOG).await?;
        transitions.reverse();
        kept.insert(id);
        let relationship = PackRelationship {
            relationship_id: id,
            owner: record.owner_profile_id,
            subject: record.subject.entity_id,
            predicate: record.predicate,
            predicate_surface: record.predicate_surface,
            object: match record.object {
                ObjectSummary::Entity(e) => PackObject::Entity {
                    entity_id: e.entity_id,
                },
                ObjectSummary::Value { value } => PackObject::Value { value },
            },
            polarity: record.polarity,
            valid_from: record.valid_from,
            valid_to: record.valid_to,
            recorded_at: record.recorded_at,
            recorded_to: record.recorded_to,
            verdict,
            tier: record.tier,
            status: record.status,
            version: record.version,
            supersedes: record.supersedes,
            supports: spans
                .into_iter()
                .map(|s| PackSpan {
                    evidence_id: s.evidence_id,
                    start: s.start,
                    end: s.end,
                })
                .collect(),
            verification_events,
            transitions,
        };
        size.add(|| relationship.line_bytes())?;
        relationships.push(relationship);
    }

    let mut entity_ids = BTreeSet::new();
    let mut predicate_names = BTreeSet::new();
    for r in &relationships {
        entity_ids.insert(r.subject);
        if let PackObject::Entity { entity_id } = r.object {
            entity_ids.insert(entity_id);
        }
        predicate_names.insert(r.predicate.clone());
    }
    let mut entities = Vec::with_capacity(entity_ids.len());
    for id in entity_ids {
        let names = rows.entity_names(actor, id).await?;
        entities.push(mnem_core::graph::Entity {
            entity_id: id,
            name: names.name,
            kind: names.kind.parse()?,
            aliases: names.aliases,
        });
    }
    let mut predicates = Vec::with_capacity(predicate_names.len());
    for predicate in predicate_names {
        let single_valued = rows
            .predicate_cardinality(actor, &predicate)
            .await?
            .unwrap_or(false);
        predicates.push(PackPredicate {
            predicate,
            single_valued,
        });
    }

    let named: HashMap<ProfileId, String> = rows.profiles(actor).await?.into_iter().collect();
    let mut profiles = Vec::new();
    for id in referenced_profiles(&evidence, &relationships) {
        let name = named
            .get(&id)
            .ok_or_else(|| StoreError::Backend(format!("profile {id} has no row").into()))?;
        profiles.push(PackProfile {
            profile_id: id,
            name: name.clone(),
        });
    }

    Ok(Pack {
        header: PackHeader {
            format: PACK_FORMAT.into(),
            version: PACK_VERSION,
            team: rows.team_name(actor).await?,
            exported_at,
            selection,
        },
        profiles,
        evidence,
        predicates,
        entities,
        relationships,
    })
}

/// The encoded bytes of the evidence and relationship lines read so far, against the
/// caller's bound. The few header, profile, entity and predicate lines are not counted:
/// the sum is a lower bound, so a pack that would fit is never refused here, and the
/// caller still checks the encoded text it gets.
struct PackSize {
    bytes: usize,
    max_bytes: Option<usize>,
}

impl PackSize {
    fn new(max_bytes: Option<usize>) -> Self {
        Self {
            bytes: 0,
            max_bytes,
        }
    }

    /// Counts one more line; its size is only computed (one more serialisation) when
    /// there is a bound to hold it to.
    fn add(&mut self, line_bytes: impl FnOnce() -> usize) -> Result<()> {
        let Some(max_bytes) = self.max_bytes else {
            return Ok(());
        };
        self.bytes += line_bytes();
        if self.bytes > max_bytes {
            return Err(StoreError::PackOverBound {
                max_bytes,
                reached: self.bytes,
            });
        }
        Ok(())
    }
}

/// Every profile the records name, in id order.
fn referenced_profiles(
    evidence: &[PackEvidence],
    relationships: &[PackRelationship],
) -> BTreeSet<ProfileId> {
    let mut ids = BTreeSet::new();
    for e in evidence {
        ids.insert(e.owner);
        ids.extend(e.history.iter().map(|h| h.actor));
        ids.extend(e.writes.iter().map(|w| w.owner));
    }
    for r in relationships {
        ids.insert(r.owner);
        ids.extend(r.transitions.iter().map(|t| t.actor));
    }
    ids
}

/// Replays a decoded pack into the actor's team inside the caller's transaction; the
/// caller commits only when this returns `Ok`, so an import is all or nothing. Records the
/// team already holds (same id) are skipped, so importing a pack twice changes nothing.
/// Profiles are matched by name (created when missing); entities by id, else by name
/// and kind; evidence whose text the team already holds is settled by de-duplication.
/// An import does not re-settle single-valued conflicts with claims the team held
/// before it.
pub async fn import<R: GraphRows + PackRows>(
    rows: &R,
    actor: &Actor,
    pack: &Pack,
    mode: ImportMode,
    now: Timestamp,
) -> Result<PackImport> {
    let mut report = PackImport::default();
    let mut profiles: HashMap<ProfileId, ProfileId> = HashMap::new();
    for p in &pack.profiles {
        let fresh = ProfileId(new_uuid_v7(now));
        let id = rows.ensure_profile(actor, &p.name, fresh, now).await?;
        profiles.insert(p.profile_id, id);
    }
    // Decoding checked that every profile the records name is listed.
    let as_actor = |profile: ProfileId| Actor {
        team: actor.team,
        profile: profiles.get(&profile).copied().unwrap_or(actor.profile),
    };

    let evidence_ids = import_evidence(rows, pack, &as_actor, now, &mut report).await?;

    for p in &pack.predicates {
        if rows
            .predicate_cardinality(actor, &p.predicate)
            .await?
            .is_none()
        {
            rows.insert_predicate(actor, &p.predicate, p.single_valued, now)
                .await?;
            report.predicates_added += 1;
        }
    }

    let mut entities: HashMap<EntityId, EntitySummary> = HashMap::new();
    for entity in &pack.entities {
        let summary = import_entity(rows, actor, entity, now, &mut report).await?;
        entities.insert(entity.entity_id, summary);
    }

    let cited: HashMap<EvidenceId, &PackEvidence> =
        pack.evidence.iter().map(|e| (e.evidence_id, e)).collect();
    for (index, r) in pack.relationships.iter().enumerate() {
        let line = pack.relationship_line(index);
        match rows.relationship(actor, r.relationship_id).await {
            Ok(_) => {
                report.relationships_present += 1;
                continue;
            }
            Err(StoreError::RelationshipNotFound { .. }) => {}
            Err(e) => return Err(e),
        }
        // `Pack::decode` resolved every reference; a pack built in code may not have.
        let unresolved = || PackError::new(line, "a reference does not resolve inside the pack");
        let supports = r
            .supports
            .iter()
            .map(|span| {
                let quote = cited
                    .get(&span.evidence_id)
                    .and_then(|e| char_span(&e.content, span.start, span.end))
                    .ok_or_else(unresolved)?;
                Ok(Support {
                    evidence_id: *evidence_ids.get(&span.evidence_id).ok_or_else(unresolved)?,
                    start: span.start,
                    end: span.end,
                    quote: quote.to_string(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let entity = |id: &EntityId| entities.get(id).cloned().ok_or_else(unresolved);
        let subject = entity(&r.subject)?;
        let object = match &r.object {
            PackObject::Entity { entity_id } => ObjectSummary::Entity(entity(entity_id)?),
            PackObject::Value { value } => ObjectSummary::Value {
                value: value.clone(),
            },
        };
        replay_relationship(
            rows,
            &as_actor,
            actor,
            r,
            RelationshipParts {
                subject: &subject,
                object: &object,
                supports: &supports,
                team: &pack.header.team,
            },
            mode,
            now,
        )
        .await?;
        report.relationships_added += 1;
    }
    Ok(report)
}

/// How many fresh records one bulk insert takes (bounds the statement's size).
const INSERT_CHUNK: usize = 1_000;

/// The pack's evidence, in three steps: each item is skipped when the team holds its id
/// with the same text, settled by de-duplication when the team holds its text current
/// (before this import: items of one pack never merge into each other), or built as a
/// fresh record with the pack's id; the fresh records are inserted in bulk in their first
/// lifecycle state; then each replays the rest of its history and its recorded writes.
/// Returns, per pack id, the id that stands for it in this team.
async fn import_evidence<R: GraphRows + PackRows>(
    rows: &R,
    pack: &Pack,
    as_actor: &impl Fn(ProfileId) -> Actor,
    now: Timestamp,
    report: &mut PackImport,
) -> Result<HashMap<EvidenceId, EvidenceId>> {
    // Each current item's text hash, computed once: held for the whole import (so no
    // concurrent writer settles the same texts), then one read per owner finds which the
    // team already holds, so only those items are settled one by one (into an empty team,
    // none is).
    let hashes: Vec<Option<String>> = pack
        .evidence
        .iter()
        .map(|item| (item.state == LifecycleState::Current).then(|| content_hash(&item.content)))
        .collect();
    let mut all: Vec<String> = hashes.iter().flatten().cloned().collect();
    all.sort_unstable();
    all.dedup();
    if !all.is_empty() {
        rows.hold_texts(&as_actor(pack.evidence[0].owner), &all)
            .await?;
    }
    let mut texts_by_owner: BTreeMap<ProfileId, Vec<String>> = BTreeMap::new();
    for (item, hash) in pack.evidence.iter().zip(&hashes) {
        if let Some(hash) = hash {
            texts_by_owner
                .entry(item.owner)
                .or_default()
                .push(hash.clone());
        }
    }
    let mut held: HashSet<(ProfileId, String)> = HashSet::new();
    for (owner, mut owned) in texts_by_owner {
        owned.sort_unstable();
        owned.dedup();
        for stored in rows.current_with_hashes(&as_actor(owner), &owned).await? {
            held.insert((owner, stored.content_hash));
        }
    }

    let mut standing_for = HashMap::with_capacity(pack.evidence.len());
    let mut fresh: Vec<(Evidence, &PackEvidence)> = Vec::new();
    for (index, (item, hash)) in pack.evidence.iter().zip(&hashes).enumerate() {
        let line = pack.evidence_line(index);
        let owner = as_actor(item.owner);
        let may_repeat = hash
            .as_ref()
            .is_some_and(|hash| held.contains(&(item.owner, hash.clone())));
        let settled = match settle_evidence(rows, &owner, item, may_repeat, line, now).await? {
            Placement::Stored(id) => {
                report.evidence_present += 1;
                id
            }
            Placement::Merged(id) => {
                report.evidence_merged += 1;
                id
            }
            Placement::Fresh(record) => {
                fresh.push((*record, item));
                item.evidence_id
            }
        };
        standing_for.insert(item.evidence_id, settled);
    }

    for chunk in fresh.chunks(INSERT_CHUNK) {
        let records: Vec<(&Evidence, Option<&str>)> = chunk
            .iter()
            .map(|(record, item)| {
                (
                    record,
                    item.history.first().and_then(|h| h.reason.as_deref()),
                )
            })
            .collect();
        rows.insert_evidence_batch(&records).await?;
    }
    for (record, item) in &fresh {
        for event in item.history.get(1..).unwrap_or_default() {
            rows.set_evidence_state(
                &as_actor(event.actor),
                record.id,
                event.state,
                event.at,
                event.reason.as_deref(),
            )
            .await?;
        }
        if !item.writes.is_empty() {
            let writes: Vec<_> = item
                .writes
                .iter()
                .map(|w| {
                    let mut write = w.clone();
                    write.owner = as_actor(w.owner).profile;
                    write
                })
                .collect();
            rows.append_writes(&as_actor(item.owner), record.id, 0, &writes)
                .await?;
        }
    }
    report.evidence_added = fresh.len();
    Ok(standing_for)
}

/// Where one pack item stands in the team before anything of the pack is inserted.
enum Placement {
    /// The team holds its id with the same text: a second import.
    Stored(EvidenceId),
    /// The team holds its text current under another id: recorded as another write of it.
    Merged(EvidenceId),
    /// To insert with the pack's id, in its first lifecycle state.
    Fresh(Box<Evidence>),
}

/// `may_repeat`: the team holds a current item with this text's hash.
async fn settle_evidence<R: GraphRows>(
    rows: &R,
    owner: &Actor,
    item: &PackEvidence,
    may_repeat: bool,
    line: usize,
    now: Timestamp,
) -> Result<Placement> {
    match rows.visible_evidence(owner, item.evidence_id).await {
        Ok(stored) if stored.content == item.content => return Ok(Placement::Stored(stored.id)),
        Ok(_) => {
            return Err(PackError::new(
                line,
                format!(
                    "evidence {} is already stored in this team with another text",
                    item.evidence_id
                ),
            )
            .into())
        }
        Err(StoreError::NotFound { .. }) => {}
        Err(e) => return Err(e),
    }
    let new = NewEvidence {
        content: item.content.clone(),
        kind: Some(item.kind.clone()),
        source_type: item.source_type,
        source: item.source.clone(),
        authority: item.authority,
        source_group: Some(item.source_group.clone()),
        source_key: item.source_key.clone(),
        source_revision: item.source_revision,
        labels: item.labels.clone(),
        refs: item.refs.clone(),
        scope: item.scope.clone(),
        space: item.space,
        observed_at: Some(item.observed_at),
        expires_at: item.expires_at,
        quarantine: None,
    };
    let mut record = new
        .into_evidence(
            item.evidence_id,
            owner.team,
            owner.profile,
            item.recorded_at,
        )
        .map_err(|e| PackError::new(line, format!("{}: {}", e.field, e.reason)))?;

    if may_repeat && item.state == LifecycleState::Current {
        // Spans of the pack's relationships count code points of this exact text, so only
        // an item with exactly this text may stand for it.
        let settled = settle_held(
            rows,
            owner,
            vec![NewRecord {
                evidence: record.clone(),
                hold: None,
                exact_text: true,
            }],
            now,
        )
        .await?;
        settled.record(rows, owner).await?;
        let answer = settled.only_answer()?;
        if answer.duplicate.is_some() {
            return Ok(Placement::Merged(answer.evidence.id));
        }
    }
    // Decoding checked the history is not empty.
    record.state = item.history.first().map_or(item.state, |first| first.state);
    Ok(Placement::Fresh(Box::new(record)))
}

/// One entity: the team's record with the same id, else the one entity of the same name
/// and kind (the pack's aliases added to it), else a new record with the pack's id.
async fn import_entity<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    entity: &mnem_core::graph::Entity,
    now: Timestamp,
    report: &mut PackImport,
) -> Result<EntitySummary> {
    let normalised = normalise_name(&entity.name);
    let aliases: Vec<(String, String)> = entity
        .aliases
        .iter()
        .map(|a| (a.clone(), normalise_name(a)))
        .chain(std::iter::once((entity.name.clone(), normalised.clone())))
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect();
    let kind: EntityKind = entity.kind;
    let matches = rows.entities_matching(actor, &normalised, kind).await?;
    if let Some(same) = matches.iter().find(|m| m.entity_id == entity.entity_id) {
        report.entities_present += 1;
        return Ok(same.clone());
    }
    let summary = match matches.as_slice() {
        [known] => {
            report.entities_matched += 1;
            known.clone()
        }
        // None, or several (ambiguous here already): the pack's own record, as exported.
        _ => {
            let created = EntitySummary {
                entity_id: entity.entity_id,
                name: entity.name.clone(),
            };
            rows.insert_entity(actor, &created, kind, now).await?;
            report.entities_added += 1;
            created
        }
    };
    rows.insert_aliases(actor, summary.entity_id, &aliases)
        .await?;
    enqueue_entity_document(rows, actor, summary.entity_id, now).await?;
    Ok(summary)
}

/// A relationship's endpoints and supports as resolved in this team.
struct RelationshipParts<'a> {
    subject: &'a EntitySummary,
    object: &'a ObjectSummary,
    supports: &'a [Support],
    /// The exporting team, named in a review-mode transition.
    team: &'a str,
}

/// Inserts one relationship with its verification events and replays its standing:
/// every exported transition (trusted), or one birth as a `candidate` (review).
async fn replay_relationship<R: GraphRows>(
    rows: &R,
    as_actor: &impl Fn(ProfileId) -> Actor,
    importer: &Actor,
    r: &PackRelationship,
    parts: RelationshipParts<'_>,
    mode: ImportMode,
    now: Timestamp,
) -> Result<()> {
    let owner = as_actor(r.owner);
    let claim = Claim {
        predicate: &r.predicate,
        predicate_surface: &r.predicate_surface,
        polarity: r.polarity,
        valid_from: r.valid_from,
        valid_to: r.valid_to,
    };
    let birth = match (mode, r.transitions.first()) {
        (ImportMode::Trusted, Some(t)) => Standing {
            tier: t.to_tier,
            status: t.to_status,
        },
        _ => Standing {
            tier: Tier::Candidate,
            status: r.status,
        },
    };
    let object_value = match parts.object {
        ObjectSummary::Value { value } => {
            Some(serde_json::to_string(value).map_err(StoreError::backend)?)
        }
        ObjectSummary::Entity(_) => None,
    };
    let row = NewRelationship {
        id: r.relationship_id,
        claim,
        subject: parts.subject.entity_id,
        object: parts.object,
        object_value,
        semantic_group_key: mnem_core::graph::semantic_group_key(
            parts.subject.entity_id,
            &r.predicate,
            parts.object,
            r.polarity,
        ),
        supersedes: r.supersedes,
        verdict: r.verdict,
        standing: birth,
        recorded_at: r.recorded_at,
        supports: parts.supports,
        events: &r.verification_events,
    };
    rows.insert_relationship(&owner, &row).await?;

    match mode {
        ImportMode::Trusted => {
            let last = r.transitions.len().saturating_sub(1);
            let mut from: Option<Standing> = None;
            for (i, t) in r.transitions.iter().enumerate() {
                let to = Standing {
                    tier: t.to_tier,
                    status: t.to_status,
                };
                if from.is_some() {
                    let closed_at = if i == last { r.recorded_to } else { None };
                    rows.update_standing(&owner, r.relationship_id, to, closed_at)
                        .await?;
                }
                let step = Transition {
                    relationship_id: r.relationship_id,
                    from,
                    to,
                    reason: &t.reason,
                    at: t.at,
                };
                rows.append_transition(&as_actor(t.actor), &step).await?;
                from = Some(to);
            }
        }
        ImportMode::Review => {
            let reason = format!(
                "imported for review from a memory pack of team `{}`, where it was {} and {}",
                parts.team, r.tier, r.status
            );
            let step = Transition {
                relationship_id: r.relationship_id,
                from: None,
                to: birth,
                reason: &reason,
                at: now,
            };
            rows.append_transition(importer, &step).await?;
        }
    }
    enqueue_relationship_document(
        rows,
        &owner,
        r.relationship_id,
        &parts.subject.name,
        &row.claim,
        parts.object,
        now,
    )
    .await
}
